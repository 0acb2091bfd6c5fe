"""Which version a worker polls as: flags, then TURNKEEPER_DEPLOYMENT_NAME / TURNKEEPER_BUILD_ID,
then the default build id; and the behaviours a versioned worker registers."""

from __future__ import annotations

import re

import pytest
from temporalio import workflow
from temporalio.common import VersioningBehavior

from turnkeeper.console.worker_cli import options_of, parse_args
from turnkeeper.worker.versioning import (
    VersioningConfigError,
    WorkerVersion,
    default_build_id,
    worker_version,
)
from turnkeeper.worker.wiring import worker_workflows

ENV = {"TURNKEEPER_DEPLOYMENT_NAME": "support", "TURNKEEPER_BUILD_ID": "2026-11-23.1"}


def test_unversioned_unless_a_deployment_is_named() -> None:
    assert worker_version(env={}) is None
    assert worker_version(env={"TURNKEEPER_DEPLOYMENT_NAME": ""}) is None


def test_flags_win_over_the_environment() -> None:
    assert worker_version(env=ENV) == WorkerVersion("support", "2026-11-23.1")
    assert worker_version("billing", "7", env=ENV) == WorkerVersion("billing", "7")
    version = worker_version("billing", env={})
    assert version is not None and version.build_id == default_build_id()
    assert version.canonical == f"billing.{default_build_id()}"


def test_the_default_build_id_is_the_version_and_a_hash_of_the_workflow_code() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+.*-[0-9a-f]{12}", default_build_id())
    assert default_build_id() == default_build_id()


@pytest.mark.parametrize(
    ("deployment", "build_id", "message"),
    [(None, "7", "needs a deployment name"), ("turn.keeper", None, "must not contain a dot")],
)
def test_settings_that_name_no_version_are_refused(
    deployment: str | None, build_id: str | None, message: str
) -> None:
    with pytest.raises(VersioningConfigError, match=message):
        worker_version(deployment, build_id, env={})


def test_the_worker_command_line_takes_the_version() -> None:
    options = options_of(parse_args(["--deployment", "support", "--build-id", "b7"]))
    assert options.version() == WorkerVersion("support", "b7")
    assert options_of(parse_args([])).deployment is None


def test_a_versioned_worker_pins_turns_and_sessions_and_upgrades_the_long_lived_ones() -> None:
    plain = [workflow._Definition.must_from_class(c) for c in worker_workflows()]
    versioned = [workflow._Definition.must_from_class(c) for c in worker_workflows(versioned=True)]
    assert [d.name for d in versioned] == [d.name for d in plain]
    assert [d.versioning_behavior for d in plain] == [VersioningBehavior.UNSPECIFIED] * 6
    # The approval cache and the two ledgers never end: pinned, their first build would poll
    # forever; always on the current build.
    # Evaluation runs end, and continue as new between batches: pinned, like turns.
    assert [d.versioning_behavior for d in versioned] == [
        VersioningBehavior.PINNED,
        VersioningBehavior.PINNED,
        VersioningBehavior.PINNED,
        VersioningBehavior.AUTO_UPGRADE,
        VersioningBehavior.AUTO_UPGRADE,
        VersioningBehavior.AUTO_UPGRADE,
    ]
    for before, after in zip(plain, versioned, strict=True):
        assert set(after.signals) == set(before.signals)
        assert set(after.queries) == set(before.queries)
        assert set(after.updates) == set(before.updates)
