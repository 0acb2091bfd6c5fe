"""Ids the runtime owns, on a real server with a worker: a turn started past every client at one
(or claiming a `parent`) fails at once with `InvalidTurnRequest`, before any model call; a turn's
sub-agent notes come only from the children it started; `started_by` is recorded from the start
and passed on to sub-agents; and a workflow of the wrong type squatting one of the runtime's own
ids (started before the runtime refused them, or by hand) is named by the turns that meet it,
while other agents and tenants go on."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.runtime.approval_cache import ApprovalCacheActivities
from turnkeeper.contracts.approvals import (
    APPROVAL_CACHE_WORKFLOW,
    ApprovalCacheInput,
    ApprovalCacheLookupInput,
    ApprovalCacheRememberInput,
    approval_cache_id,
)
from turnkeeper.contracts.errors import (
    INVALID_SESSION_REQUEST,
    INVALID_TURN_REQUEST,
    RUNTIME_ID_TAKEN,
)
from turnkeeper.contracts.names import (
    QUERY_STATUS,
    SESSION_WORKFLOW_TYPE,
    SIGNAL_APPROVE,
    SIGNAL_SUBAGENT_CANCELLED,
    SIGNAL_SUBAGENT_PENDING,
    WORKFLOW_TYPE,
)
from turnkeeper.contracts.rate_limits import RateLimit, rate_limiter_id
from turnkeeper.contracts.search_attributes import STARTED_BY
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.tenants import ledger_id
from turnkeeper.contracts.turn import AgentReport

import turnkeeper
from tests.conftest import (
    TurnRunner,
    failure_of_turn,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
    wait_for_pending,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.workflows.test_approval_cache import current_details


def asks_to_write(turns: TurnRunner, key: str, **overrides: Any) -> dict[str, Any]:
    """A turn that asks to write a file (approval needed), then answers."""
    turns.fake.script(
        key,
        [fake.tool_calls(("write_file", {"path": f"{key}.md", "content": "x"})), fake.text("ok")],
    )
    agent = {"tools": ["write_file"], **overrides.pop("agent", {})}
    task = {"constraints": {"require_approval": ["write_file"]}}
    return scripted_request(key, agent=agent, task=task, **overrides)


async def approve_all(handle: WorkflowHandle, **decision: Any) -> None:
    status = await wait_for_pending(handle)
    for call in status.pending:
        payload = {"call_id": call.call_id, "approved": True, "approver": "alice", **decision}
        await handle.signal(SIGNAL_APPROVE, payload)


@pytest.mark.parametrize(
    ("workflow_id", "says"),
    [
        ("approval-cache-{key}", "an agent's standing approvals"),
        ("turnkeeper-tenant/{key}", "a tenant's spend ledger"),
        ("rate-limit-anthropic:{key}", "a model's rate-limit ledger"),
        ("turn-{key}/writer-1", "sub-agent and session turns"),
    ],
)
async def test_a_raw_start_at_an_id_the_runtime_keeps_fails_before_any_model_call(
    turns: TurnRunner, workflow_id: str, says: str
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("I took the id.")])
    handle = await turns.start(scripted_request(key), workflow_id.format(key=key))
    error, report = await failure_of_turn(handle)
    assert error.type == INVALID_TURN_REQUEST
    assert error.message.startswith(f"invalid turn request: id {handle.id!r} is reserved")
    assert says in error.message
    assert turns.fake.requests_for(key) == [] and report.llm_calls == 0


async def test_a_parent_set_by_a_caller_fails_and_never_shows_in_the_leads_pending_list(
    turns: TurnRunner,
) -> None:
    lead = await turns.start(asks_to_write(turns, new_key()))
    [own] = (await wait_for_pending(lead)).pending
    intruder_key = new_key()
    parent = {"workflow_id": lead.id, "call_id": own.call_id, "depth": 1}
    intruder = await turns.start(asks_to_write(turns, intruder_key, parent=parent))
    error, _ = await failure_of_turn(intruder)
    assert error.type == INVALID_TURN_REQUEST
    assert "parent: is set by the runtime" in error.message and lead.id in error.message
    assert turns.fake.requests_for(intruder_key) == []

    status = await lead.query(QUERY_STATUS, result_type=TurnStatus)
    assert [call.call_id for call in status.pending] == [own.call_id]
    await approve_all(lead)
    report = await lead.result()
    assert (report.outcome, report.tool_calls) == ("completed", 1)


async def test_sub_agent_notes_from_turns_it_did_not_start_are_ignored(turns: TurnRunner) -> None:
    lead = await turns.start(asks_to_write(turns, new_key()))
    [own] = (await wait_for_pending(lead)).pending
    forged_call = own.model_dump(mode="json") | {
        "call_id": "toolu_forged",
        "workflow_id": f"{lead.id}/writer-1",
    }
    # Named like a child the lead would start, and like one that is no child at all.
    for sender in (f"{lead.id}/writer-1", "turn-someone-else"):
        note = {"workflow_id": sender, "pending": [forged_call]}
        await lead.signal(SIGNAL_SUBAGENT_PENDING, note)
        cancelled = {
            "workflow_id": sender,
            "report": {"agent_id": "x", "task_id": "t", "outcome": "cancelled", "cost_usd": 9.0},
        }
        await lead.signal(SIGNAL_SUBAGENT_CANCELLED, cancelled)
    status = await lead.query(QUERY_STATUS, result_type=TurnStatus)
    assert [call.call_id for call in status.pending] == [own.call_id]
    await approve_all(lead)
    report = await lead.result()
    assert report.outcome == "completed" and report.cost_usd < 9.0 and report.subagents == []


async def test_start_turn_refuses_an_id_the_runtime_keeps_and_a_parent(turns: TurnRunner) -> None:
    request = scripted_request(new_key())
    for workflow_id in ("approval-cache-test-agent", f"turn-{new_key()}/writer-1"):
        with pytest.raises(turnkeeper.InvalidTurnRequest, match="is reserved"):
            await turnkeeper.start_turn(turns.client, request, id=workflow_id)
    parent = {"workflow_id": "turn-lead", "call_id": "toolu_1", "depth": 1}
    refused_id = f"turn-{new_key()}"
    with pytest.raises(turnkeeper.InvalidTurnRequest, match="parent: is set by the runtime"):
        await turnkeeper.start_turn(turns.client, {**request, "parent": parent}, id=refused_id)
    with pytest.raises(RPCError) as missing:
        await turns.client.get_workflow_handle(refused_id).describe()
    assert missing.value.status == RPCStatusCode.NOT_FOUND  # nothing was started


async def test_started_by_is_recorded_and_passed_to_sub_agents(turns: TurnRunner) -> None:
    key, child_key = new_key(), new_key()
    turns.fake.script(key, [fake.tool_calls(("writer", {"task": "write"})), fake.text("done")])
    turns.fake.script(child_key, [fake.text("written")])
    writer = {
        "name": "writer",
        "description": "Writes.",
        "agent": {
            "id": "writer-agent",
            "model": "anthropic:claude-sonnet-4-6",
            "system_prompt": f"You write. {fake.script_marker(child_key)}",
        },
    }
    request = scripted_request(key, agent={"subagents": [writer]})
    handle = await turnkeeper.start_turn(
        turns.client, request, id=f"turn-{key}", task_queue=turns.task_queue, started_by="alice"
    )
    report = await handle.result()
    assert report.started_by == "alice" and report.outcome == "completed"
    assert (await handle.status()).started_by == "alice"
    assert "started by `alice`" in await current_details(handle.workflow)
    child = turns.client.get_workflow_handle(f"turn-{key}/writer-1", result_type=AgentReport)
    assert (await child.result()).started_by == "alice"
    for workflow in (handle.workflow, child):
        described = await workflow.describe()
        assert described.typed_search_attributes.get(STARTED_BY) == "alice"

    other = new_key()
    turns.fake.script(other, [fake.text("mine")])
    nobody = await turns.run(scripted_request(other))
    assert nobody.started_by is None


# ---- squatters: a workflow of another type at one of the runtime's own ids -------------------


async def squat(client: Client, workflow_id: str, task_queue: str) -> WorkflowHandle:
    """A workflow of the wrong type at `workflow_id`, run by the worker: an approval cache."""
    return await client.start_workflow(
        APPROVAL_CACHE_WORKFLOW,
        ApprovalCacheInput(agent_id="squatter"),
        id=workflow_id,
        task_queue=task_queue,
    )


async def test_a_squatter_at_a_tenants_ledger_is_named_and_other_tenants_go_on(
    turns: TurnRunner,
) -> None:
    tenant, other = f"sq-{new_key()}", f"ok-{new_key()}"
    squatter = await squat(turns.client, ledger_id(tenant), turns.task_queue)
    try:
        key = new_key()
        turns.fake.script(key, [fake.text("never")])
        error, report = await failure_of_turn(
            await turns.start(scripted_request(key, tenant=tenant))
        )
        assert error.type == RUNTIME_ID_TAKEN
        assert (
            f"workflow {ledger_id(tenant)} is a {APPROVAL_CACHE_WORKFLOW}, not the "
            "TenantLedgerWorkflow the runtime keeps there; terminate it"
        ) in error.message
        assert turns.fake.requests_for(key) == [] and report.llm_calls == 0

        fine = new_key()
        turns.fake.script(fine, [fake.text("Billed.")])
        assert (await turns.run(scripted_request(fine, tenant=other))).outcome == "completed"
    finally:
        await squatter.terminate("test over")


async def test_a_squatter_at_a_models_rate_limit_ledger_is_named(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    model = f"anthropic:sq-{uuid.uuid4().hex[:8]}"
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    settings = dataclasses.replace(
        settings, rate_limits={model: RateLimit(requests_per_minute=100)}
    )
    async with running_worker(client, settings, fake_anthropic):
        squatter = await squat(client, rate_limiter_id(model), settings.task_queue)
        try:
            key = new_key()
            fake_anthropic.script(key, [fake.text("never")])
            handle = await client.start_workflow(
                WORKFLOW_TYPE,
                scripted_request(key, agent={"model": model}),
                id=f"turn-{key}",
                task_queue=settings.task_queue,
                result_type=AgentReport,
            )
            error, _ = await failure_of_turn(handle)
            assert error.type == RUNTIME_ID_TAKEN
            assert f"workflow {rate_limiter_id(model)} is a {APPROVAL_CACHE_WORKFLOW}" in (
                error.message
            )
            assert fake_anthropic.requests_for(key) == []
        finally:
            await squatter.terminate("test over")


async def test_a_squatter_at_an_approval_cache_is_named_by_both_activities(
    turns: TurnRunner,
) -> None:
    agent_id = f"agent-{new_key()}"
    # A turn started there before the runtime refused the id, on a queue no worker polls: it
    # never answers (and would fail at once on today's worker).
    squatter = await turns.client.start_workflow(
        WORKFLOW_TYPE,
        scripted_request(new_key()),
        id=approval_cache_id(agent_id),
        task_queue=f"nobody-{new_key()}",
    )
    try:
        activities = ApprovalCacheActivities(turns.client, turns.task_queue)
        environment = ActivityEnvironment(client=turns.client)
        says = f"workflow {approval_cache_id(agent_id)} is a {WORKFLOW_TYPE}, not the"
        lookup = ApprovalCacheLookupInput(agent_id=agent_id, tools=["write_file"])
        with pytest.raises(ApplicationError, match=says) as refused:
            await environment.run(activities.approval_cache_lookup, lookup)
        assert refused.value.type == RUNTIME_ID_TAKEN and refused.value.non_retryable
        remember = ApprovalCacheRememberInput(
            agent_id=agent_id, tool="write_file", approver="alice", at=datetime.now(UTC)
        )
        with pytest.raises(ApplicationError, match=says):
            await environment.run(activities.approval_cache_remember, remember)
    finally:
        await squatter.terminate("test over")


async def test_a_session_at_an_id_the_runtime_keeps_is_refused(turns: TurnRunner) -> None:
    session_id = f"approval-cache-{new_key()}"
    agent = {"id": "test-agent", "model": "anthropic:claude-sonnet-4-6"}
    with pytest.raises(turnkeeper.InvalidSessionRequest, match="is reserved"):
        await turnkeeper.start_session(
            turns.client, session_id=session_id, agent=agent, task_queue=turns.task_queue
        )
    handle = await turns.client.start_workflow(
        SESSION_WORKFLOW_TYPE,
        {"session_id": session_id, "agent": agent},
        id=session_id,
        task_queue=turns.task_queue,
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    error = failed.value.cause
    assert isinstance(error, ApplicationError) and error.type == INVALID_SESSION_REQUEST
    assert f"session_id: {session_id!r} is reserved" in error.message
