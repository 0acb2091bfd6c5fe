"""A deploy under Worker Deployment Versioning, on a real dev server, step by step as the README's
upgrade runbook: turns parked on approvals under build A; build B (a workflow change that cannot
replay A's histories) ramps, then becomes current; A's parked turns finish on A, new turns run on
B, the approval cache moves to B; A drains and stops."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker
from turnkeeper.contracts.approvals import (
    APPROVAL_CACHE_WORKFLOW,
    QUERY_STANDING,
    SIGNAL_REMEMBER,
    ApprovalCacheInput,
    RememberInput,
    StandingApproval,
)
from turnkeeper.contracts.names import SIGNAL_APPROVE, WORKFLOW_TYPE
from turnkeeper.contracts.turn import AgentReport
from turnkeeper.workflows.approvals.approval_cache_workflow import UpgradingApprovalCacheWorkflow

from tests.conftest import (
    make_settings,
    new_key,
    providers_for,
    scripted_request,
    wait_for_pending,
)
from tests.deployment.build_b_workflow import BUILD_MEMO, BuildBTurnWorkflow
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.waiting import until
from turnkeeper.devtools import deployments
from turnkeeper.worker.settings import Settings
from turnkeeper.worker.versioning import WorkerVersion
from turnkeeper.worker.wiring import build_activities, worker_workflows, workflow_runner

T = TypeVar("T")

PARKED_TURNS = 3
RAMPED_TURNS = 20
ITERATIONS = 15


def build_worker(
    client: Client,
    settings: Settings,
    fake_anthropic: FakeAnthropic,
    version: WorkerVersion,
    workflows: list[type],
) -> Worker:
    return Worker(
        client,
        task_queue=settings.task_queue,
        workflows=workflows,
        workflow_runner=workflow_runner(),
        activities=build_activities(
            settings, client=client, providers=providers_for(fake_anthropic)
        ),
        deployment_config=version.deployment_config(),
    )


async def build_of(handle: WorkflowHandle[Any, Any]) -> str:
    """The build whose worker completed the turn's last workflow task, per the server."""
    description = await handle.describe()
    info = description.raw_description.workflow_execution_info.versioning_info
    return info.deployment_version.build_id


async def ran_build_b_code(handle: WorkflowHandle[Any, Any]) -> bool:
    description = await handle.describe()
    return await description.memo_value(BUILD_MEMO, default=None) == "B"


async def test_parked_turns_finish_on_their_build_while_new_turns_move_to_the_next(
    versioned_env: WorkflowEnvironment, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    client = versioned_env.client
    deployment = f"turnkeeper-{uuid.uuid4().hex[:8]}"
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    build_a = WorkerVersion(deployment, "A")
    build_b = WorkerVersion(deployment, "B")

    def start(key: str, workflow_id: str) -> Awaitable[WorkflowHandle[Any, AgentReport]]:
        return client.start_workflow(
            WORKFLOW_TYPE,
            scripted_request(key, agent={"tools": ["write_file"]}),
            id=workflow_id,
            task_queue=settings.task_queue,
            result_type=AgentReport,
        )

    # 1. Build A is current; turns park on approvals; the agent's approval cache runs on A.
    worker_a = build_worker(
        client, settings, fake_anthropic, build_a, worker_workflows(versioned=True)
    )
    a_running = asyncio.create_task(worker_a.run())
    await until(lambda: promoted(client, deployment, "A"), bool, "A current", 30)
    parked = []
    for i in range(PARKED_TURNS):
        key = new_key()
        fake_anthropic.script(
            key,
            [
                fake.tool_calls(("write_file", {"path": f"p{i}.md", "content": "x"})),
                fake.text("ok"),
            ],
        )
        parked.append(await start(key, f"parked-{i}-{key}"))
    for handle in parked:
        await wait_for_pending(handle)
    cache = await client.start_workflow(
        APPROVAL_CACHE_WORKFLOW,
        ApprovalCacheInput(agent_id=f"agent-{deployment}"),
        id=f"approval-cache-agent-{deployment}",
        task_queue=settings.task_queue,
    )
    await cache.signal(SIGNAL_REMEMBER, RememberInput(tool="read_file", approver="alice"))
    await until(lambda: _is(build_of(cache), "A"), bool, "cache on A")

    # 2. Build B's workers start; B ramps to half of the new turns.
    worker_b = build_worker(
        client,
        settings,
        fake_anthropic,
        build_b,
        [BuildBTurnWorkflow, UpgradingApprovalCacheWorkflow],
    )
    b_running = asyncio.create_task(worker_b.run())
    await until(lambda: _ramped(client, deployment, "B", 50), bool, "B ramping", 30)
    ramped = await _quick_turns(client, fake_anthropic, settings, "ramp", RAMPED_TURNS)
    ramped_builds = [await build_of(h) for h in ramped]
    on_b = sum(await asyncio.gather(*(ran_build_b_code(h) for h in ramped)))
    assert set(ramped_builds) == {"A", "B"}, ramped_builds
    assert on_b == ramped_builds.count("B")
    print(f"ramp at 50 %: {ramped_builds.count('B')} of {RAMPED_TURNS} new turns ran on B")

    # 3. B becomes current: how long until a new turn runs there.
    promoted_at = time.monotonic()
    previous = await deployments.promote(client, deployment, "B")
    [first_on_b] = await _quick_turns(client, fake_anthropic, settings, "after", 1)
    cut_over_s = time.monotonic() - promoted_at
    assert previous == "A"
    assert await build_of(first_on_b) == "B"
    assert completed_by((await first_on_b.fetch_history()).events) == ["B"]
    assert await ran_build_b_code(first_on_b)
    status = await deployments.status(client, deployment)
    assert status.current_build_id == "B"
    assert status.ramping_build_id is None

    # The approval cache (AUTO_UPGRADE) moves to B at its next message, its approvals intact.
    await cache.signal(SIGNAL_REMEMBER, RememberInput(tool="list_files", approver="bob"))
    await until(lambda: _is(build_of(cache), "B"), bool, "cache on B")
    standing = await cache.query(QUERY_STANDING, result_type=list[StandingApproval])
    assert [s.tool for s in standing] == ["list_files", "read_file"]
    # B's worker replayed A's part of the history and handled the new message; nothing failed.
    history = await cache.fetch_history()
    assert not [e for e in history.events if e.HasField("workflow_task_failed_event_attributes")]
    assert completed_by(history.events) == ["A", "B"]

    # 4. A's parked turns are approved and finish on A, with B current; B could not replay them.
    for handle in parked:
        [pending] = (await wait_for_pending(handle)).pending
        await handle.signal(
            SIGNAL_APPROVE, {"call_id": pending.call_id, "approved": True, "approver": "alice"}
        )
    reports = [await handle.result() for handle in parked]
    assert [r.output for r in reports] == ["ok"] * PARKED_TURNS
    assert [await build_of(h) for h in parked] == ["A"] * PARKED_TURNS
    for handle in parked:  # every workflow task of theirs, before and after the promotion
        assert completed_by((await handle.fetch_history()).events) == ["A"]
    assert not any([await ran_build_b_code(h) for h in parked])

    # 5. A drains (no open workflow pinned to it), then its workers stop; B serves on.
    drained_at = await until(
        lambda: _drained(client, deployment, "A"), bool, "A drained", within_s=90
    )
    await worker_a.shutdown()
    await a_running
    [last] = await _quick_turns(client, fake_anthropic, settings, "last", 1)
    assert await build_of(last) == "B"
    print(
        f"cut-over: a new turn ran on B {cut_over_s:.2f} s after promotion; "
        f"A drained {drained_at - promoted_at:.1f} s after promotion; "
        f"{PARKED_TURNS} of {PARKED_TURNS} parked turns finished on A"
    )
    await cache.terminate("test over")
    await worker_b.shutdown()
    await b_running


def completed_by(events: Any) -> list[str]:
    """The builds whose workers completed the workflow tasks, in order, without repeats."""
    builds = [
        e.workflow_task_completed_event_attributes.deployment_version.build_id
        for e in events
        if e.HasField("workflow_task_completed_event_attributes")
    ]
    return [b for i, b in enumerate(builds) if i == 0 or builds[i - 1] != b]


async def _is(value: Awaitable[str], expected: str) -> bool:
    return await value == expected


async def promoted(client: Client, deployment: str, build_id: str) -> bool:
    """Promotes `build_id`; True once the server took it (it refuses until the version polled)."""
    await deployments.promote(client, deployment, build_id)
    return True


async def _ramped(client: Client, deployment: str, build_id: str, percent: float) -> bool:
    await deployments.ramp(client, deployment, build_id, percent)
    return True


async def _drained(client: Client, deployment: str, build_id: str) -> float | None:
    status = await deployments.status(client, deployment)
    [version] = [v for v in status.versions if v.build_id == build_id]
    return time.monotonic() if version.status == "drained" else None


async def _quick_turns(
    client: Client, fake_anthropic: FakeAnthropic, settings: Settings, label: str, count: int
) -> list[WorkflowHandle[Any, AgentReport]]:
    handles = []
    for i in range(count):
        key = new_key()
        fake_anthropic.script(key, [fake.text(f"{label} {i}")])
        handles.append(
            await client.start_workflow(
                WORKFLOW_TYPE,
                scripted_request(key),
                id=f"{label}-{i}-{key}",
                task_queue=settings.task_queue,
                result_type=AgentReport,
            )
        )
    for handle in handles:
        await handle.result()
    return handles


async def test_a_long_turn_moves_to_the_current_build_when_it_continues_as_new(
    versioned_env: WorkflowEnvironment, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    client = versioned_env.client
    deployment = f"turnkeeper-{uuid.uuid4().hex[:8]}"
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    key = new_key()
    listing = fake.tool_calls(("list_files", {"path": "."}))
    # The second model call is slow: build B becomes current while the turn runs on A.
    fake_anthropic.script(
        key, [listing, fake.slow(listing, 3.0), *[listing] * (ITERATIONS - 3), fake.text("done")]
    )
    worker_a = build_worker(
        client, settings, fake_anthropic, WorkerVersion(deployment, "A"),
        worker_workflows(versioned=True),
    )  # fmt: skip
    worker_b = build_worker(
        client, settings, fake_anthropic, WorkerVersion(deployment, "B"),
        [BuildBTurnWorkflow, UpgradingApprovalCacheWorkflow],
    )  # fmt: skip
    async with worker_a:
        await until(lambda: promoted(client, deployment, "A"), bool, "A current", 30)
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            scripted_request(key, agent={"tools": ["list_files"], "max_iterations": ITERATIONS}),
            id=f"long-{key}",
            task_queue=settings.task_queue,
            result_type=AgentReport,
        )
        await fake_anthropic.wait_for_requests(key, 2, timeout_s=30)
        async with worker_b:
            await until(lambda: promoted(client, deployment, "B"), bool, "B current", 30)
            report = await handle.result()

    runs = [
        client.get_workflow_handle(handle.id, run_id=execution.run_id)
        async for execution in client.list_workflows(f'WorkflowId = "{handle.id}"')
    ]
    builds = {await build_of(run) for run in runs}
    assert report.output == "done"
    assert report.llm_calls == ITERATIONS
    assert len(runs) >= 2
    assert builds == {"A", "B"}, builds
    # The first run stayed pinned to A; the continued run started on B and ran B's code.
    latest = client.get_workflow_handle(handle.id)
    assert await build_of(latest) == "B"
    assert await ran_build_b_code(latest)
    print(f"a {ITERATIONS}-iteration turn ran {len(runs)} runs, on builds {sorted(builds)}")
