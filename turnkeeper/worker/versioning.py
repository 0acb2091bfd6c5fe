"""Worker Deployment Versioning: which deployment and build a worker belongs to.

A versioned worker (`worker.py --deployment NAME`) polls as one version, `NAME.BUILD_ID`, of a
Temporal Worker Deployment. Turns are PINNED to the version they started on, so a turn parked on
an approval for a week finishes on the code that started it, however many deploys happen
meanwhile; new turns go to the deployment's current (or ramping) version. Promoting, ramping and
rolling back are the server's routing state (`turnkeeper deploy …`,
`turnkeeper.devtools.deployments`).

Without a deployment name the worker is unversioned, as the demo and most tests run it.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Final

from temporalio.common import WorkerDeploymentVersion
from temporalio.worker import WorkerDeploymentConfig

DEPLOYMENT_NAME_ENV: Final = "TURNKEEPER_DEPLOYMENT_NAME"
BUILD_ID_ENV: Final = "TURNKEEPER_BUILD_ID"

# The code a workflow task runs: a change here is what a build id must tell apart. Activities are
# left out on purpose: they may change between builds without breaking a single history.
_WORKFLOW_CODE_PACKAGES: Final = ("turnkeeper.workflows", "turnkeeper.contracts")
_HASH_CHARS: Final = 12


class VersioningConfigError(ValueError):
    """The deployment settings cannot describe a version (the message says which)."""


@dataclass(frozen=True)
class WorkerVersion:
    """The version a worker polls as: `deployment_name.build_id`."""

    deployment_name: str
    build_id: str

    @property
    def canonical(self) -> str:
        return f"{self.deployment_name}.{self.build_id}"

    def deployment_config(self) -> WorkerDeploymentConfig:
        """The SDK's settings for it. No default behaviour: every workflow a versioned worker
        registers must say PINNED or AUTO_UPGRADE itself, and the worker refuses to start if one
        does not, rather than guessing for a workflow whose lifetime it cannot know."""
        return WorkerDeploymentConfig(
            version=WorkerDeploymentVersion(self.deployment_name, self.build_id),
            use_worker_versioning=True,
        )


def worker_version(
    deployment: str | None = None,
    build_id: str | None = None,
    env: Mapping[str, str] | None = None,
) -> WorkerVersion | None:
    """The version of `--deployment` / `--build-id`, else `TURNKEEPER_DEPLOYMENT_NAME` /
    `TURNKEEPER_BUILD_ID`; None (an unversioned worker) when no deployment is named.

    Raises:
        VersioningConfigError: A build id without a deployment, or a name Temporal cannot take.
    """
    source = os.environ if env is None else env
    name = deployment or source.get(DEPLOYMENT_NAME_ENV) or None
    build = build_id or source.get(BUILD_ID_ENV) or None
    if name is None:
        if build is not None:
            raise VersioningConfigError(
                f"a build id ({build!r}) needs a deployment name: --deployment or "
                f"{DEPLOYMENT_NAME_ENV}"
            )
        return None
    if "." in name:
        # The canonical form `name.build` splits at the first dot.
        raise VersioningConfigError(f"deployment name {name!r} must not contain a dot")
    return WorkerVersion(name, build or default_build_id())


def default_build_id() -> str:
    """The package version and a hash of the workflow code, e.g. `0.1.0-3f2a9c1b7d4e`: two
    builds share an id only if their workflows replay each other's histories by construction."""
    return f"{_package_version()}-{workflow_code_hash()}"


def workflow_code_hash() -> str:
    digest = hashlib.sha256()
    for package in _WORKFLOW_CODE_PACKAGES:
        root = _package_dir(package)
        for path in sorted(p for p in root.rglob("*") if p.suffix in {".py", ".json"}):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:_HASH_CHARS]


def _package_dir(package: str) -> Path:
    return Path(str(importlib.import_module(package).__file__)).parent


def _package_version() -> str:
    try:
        return metadata.version("turnkeeper")
    except metadata.PackageNotFoundError:
        return "0+unknown"
