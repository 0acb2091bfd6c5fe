"""`turnkeeper deploy status|promote|ramp|rollback` against versioned workers on a dev server:
the routing the server reports after each command, and the refusals a user can meet."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tests.support.console_runs import address_of, invoke, restore_logging  # noqa: F401 (autouse fixture)
from tests.support.waiting import until
from turnkeeper.devtools import deployments
from turnkeeper.worker.versioning import WorkerVersion
from turnkeeper.worker.wiring import worker_workflows, workflow_runner


@pytest.fixture
async def two_builds(versioned_env: WorkflowEnvironment) -> AsyncIterator[str]:
    """Workers of builds A and B of a fresh deployment, polling, with nothing current yet."""
    client = versioned_env.client
    deployment = f"cli-{uuid.uuid4().hex[:8]}"
    task_queue = f"tq-{uuid.uuid4()}"
    workers = [
        Worker(
            client,
            task_queue=task_queue,
            workflows=worker_workflows(versioned=True),
            workflow_runner=workflow_runner(),
            deployment_config=WorkerVersion(deployment, build).deployment_config(),
        )
        for build in ("A", "B")
    ]
    async with workers[0], workers[1]:
        await until(lambda: _versions(client, deployment, 2), bool, "both versions registered", 30)
        yield deployment


async def _versions(client: Client, deployment: str, count: int) -> bool:
    return len((await deployments.status(client, deployment)).versions) >= count


async def status_json(client: Client, deployment: str) -> dict:
    result = await invoke(
        "deploy", "status", "--deployment", deployment, "--json", *address_of(client)
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


async def test_promote_ramp_and_rollback_change_the_servers_routing(
    versioned_env: WorkflowEnvironment, two_builds: str
) -> None:
    client, deployment = versioned_env.client, two_builds
    where = ["--deployment", deployment, *address_of(client)]

    promoted = await invoke("deploy", "promote", "A", *where)
    assert promoted.exit_code == 0, promoted.output
    assert "A is current" in promoted.output
    ramped = await invoke("deploy", "ramp", "25", "--build-id", "B", *where)
    assert ramped.exit_code == 0, ramped.output
    status = await status_json(client, deployment)
    assert (status["current"], status["ramping"], status["ramp_percent"]) == ("A", "B", 25)

    assert (await invoke("deploy", "promote", "B", *where)).exit_code == 0
    status = await status_json(client, deployment)
    assert (status["current"], status["ramping"]) == ("B", None)
    versions = {v["build_id"]: v["status"] for v in status["versions"]}
    assert versions == {"A": "draining", "B": "current"} or versions["A"] == "drained", versions

    rolled = await invoke("deploy", "rollback", *where)
    assert rolled.exit_code == 0, rolled.output
    assert "A is current again" in rolled.output
    assert (await status_json(client, deployment))["current"] == "A"


async def test_refusals_say_what_to_do(versioned_env: WorkflowEnvironment, two_builds: str) -> None:
    client, deployment = versioned_env.client, two_builds
    where = ["--deployment", deployment, *address_of(client)]

    too_much = await invoke("deploy", "ramp", "150", "--build-id", "B", *where)
    assert too_much.exit_code == 1
    assert "from 0 to 100, not 150" in too_much.output
    unnamed = await invoke("deploy", "ramp", "10", *where)
    assert unnamed.exit_code == 2
    assert "--build-id" in unnamed.output
    nothing_to_go_back_to = await invoke("deploy", "rollback", *where)
    assert nothing_to_go_back_to.exit_code == 1
    assert "no draining or drained version" in nothing_to_go_back_to.output
    unknown = await invoke("deploy", "promote", "C", *where)
    assert unknown.exit_code == 1
    assert "Temporal refused" in unknown.output
    no_name = await invoke("deploy", "status", *address_of(client))
    assert no_name.exit_code == 2
    assert "TURNKEEPER_DEPLOYMENT_NAME" in no_name.output
