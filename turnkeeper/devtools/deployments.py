"""Routing of a Worker Deployment's versions: status, promote, ramp, rollback.

Thin calls over Temporal's deployment gRPC API (the SDK has no higher-level client for it). The
server holds every bit of state: which version is current, which ramps and by how much, which
versions drain. Nothing is remembered here, so `turnkeeper deploy` and
`temporal worker deployment …` can be used interchangeably.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from temporalio.api.enums.v1 import VersionDrainageStatus, WorkerDeploymentVersionStatus
from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentRequest,
    SetWorkerDeploymentCurrentVersionRequest,
    SetWorkerDeploymentRampingVersionRequest,
)
from temporalio.client import Client

IDENTITY: Final = "turnkeeper deploy"


class DeploymentError(RuntimeError):
    """The deployment cannot do what was asked (the message says why and what to do)."""


@dataclass(frozen=True)
class VersionSummary:
    """One version of a deployment, as the server reports it."""

    build_id: str
    status: str  # current, ramping, draining, drained, inactive
    drainage: str  # unspecified, draining, drained


@dataclass(frozen=True)
class DeploymentStatus:
    name: str
    current_build_id: str | None  # None: unversioned workers take new workflows
    ramping_build_id: str | None
    ramp_percent: float
    versions: list[VersionSummary]


async def status(client: Client, deployment: str) -> DeploymentStatus:
    """The deployment's routing and versions.

    Raises:
        RPCError: NOT_FOUND when no worker of that deployment has polled yet.
    """
    response = await client.workflow_service.describe_worker_deployment(
        DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=deployment)
    )
    info = response.worker_deployment_info
    routing = info.routing_config
    versions = [
        VersionSummary(
            build_id=summary.deployment_version.build_id,
            status=_enum_name(WorkerDeploymentVersionStatus, summary.status),
            drainage=_enum_name(VersionDrainageStatus, summary.drainage_status),
        )
        for summary in info.version_summaries
    ]
    return DeploymentStatus(
        name=info.name,
        current_build_id=routing.current_deployment_version.build_id or None,
        ramping_build_id=routing.ramping_deployment_version.build_id or None,
        ramp_percent=routing.ramping_version_percentage,
        versions=sorted(versions, key=lambda v: v.build_id),
    )


async def promote(client: Client, deployment: str, build_id: str) -> str | None:
    """Make `build_id` current: new turns (and the approval caches) go to it; turns pinned to
    other versions stay where they are. Returns the build id that was current before.

    Raises:
        RPCError: FAILED_PRECONDITION when no worker of that version polls yet.
    """
    response = await client.workflow_service.set_worker_deployment_current_version(
        SetWorkerDeploymentCurrentVersionRequest(
            namespace=client.namespace,
            deployment_name=deployment,
            build_id=build_id,
            identity=IDENTITY,
        )
    )
    return response.previous_deployment_version.build_id or None


async def ramp(client: Client, deployment: str, build_id: str, percent: float) -> None:
    """Send `percent` of new turns to `build_id`, the rest to the current version; 0 ends a ramp.

    Raises:
        DeploymentError: `percent` is outside 0-100.
    """
    if not 0 <= percent <= 100:
        raise DeploymentError(f"a ramp is a percentage from 0 to 100, not {percent:g}")
    await client.workflow_service.set_worker_deployment_ramping_version(
        SetWorkerDeploymentRampingVersionRequest(
            namespace=client.namespace,
            deployment_name=deployment,
            build_id=build_id if percent > 0 else "",
            percentage=percent,
            identity=IDENTITY,
        )
    )


async def rollback(client: Client, deployment: str, build_id: str | None = None) -> str:
    """Make an earlier version current again: `build_id`, or else the newest version that is
    draining or drained (the one just replaced). Turns already pinned to the replaced version
    stay on it; only new turns go back. Returns the build id now current.

    Raises:
        DeploymentError: No earlier version to go back to.
    """
    if build_id is None:
        now = await status(client, deployment)
        earlier = [
            v.build_id
            for v in now.versions
            if v.status in {"draining", "drained"} and v.build_id != now.current_build_id
        ]
        if not earlier:
            raise DeploymentError(
                f"deployment {deployment!r} has no draining or drained version to roll back to; "
                "name one with --build-id"
            )
        build_id = await _newest(client, deployment, earlier)
    await promote(client, deployment, build_id)
    return build_id


async def _newest(client: Client, deployment: str, build_ids: list[str]) -> str:
    response = await client.workflow_service.describe_worker_deployment(
        DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=deployment)
    )
    last_current = {
        s.deployment_version.build_id: s.last_current_time.ToNanoseconds()
        for s in response.worker_deployment_info.version_summaries
    }
    return max(build_ids, key=lambda b: last_current.get(b, 0))


def _enum_name(enum: type, value: int) -> str:
    # "WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT" -> "current"
    full = enum.Name(value)  # type: ignore[attr-defined]
    return full.rsplit("_STATUS_", 1)[-1].lower()
