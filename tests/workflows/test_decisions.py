"""Approvals, production grade: the `decide` update and its validator, approver policy,
deciding every pending call at once, and editing a call before approving it."""

from __future__ import annotations

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.service import RPCError
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import QUERY_DECISIONS, SIGNAL_APPROVE, UPDATE_DECIDE
from turnkeeper.contracts.signals import DecideResult, TurnStatus
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import TurnRunner, new_key, scripted_request, wait_for_pending
from tests.fakes import fake_anthropic as fake
from turnkeeper.client.approvals import list_standing, revoke

WRITE_A = ("write_file", {"path": "a.md", "content": "A"})
WRITE_B = ("write_file", {"path": "b.md", "content": "B"})


def results(report: AgentReport) -> list[ToolResultBlock]:
    return [b for b in report.messages[2].content if isinstance(b, ToolResultBlock)]


async def rejected_update(handle, payload: dict) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises((WorkflowUpdateFailedError, RPCError)) as failure:
        await handle.execute_update(UPDATE_DECIDE, payload, result_type=DecideResult)
    error = failure.value
    cause = getattr(error, "cause", None)
    return str(getattr(cause, "message", None) or error)


async def test_decide_update_returns_the_decision_as_applied(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE_A), fake.text("saved")])
    handle = await turns.start(scripted_request(key))
    [pending] = (await wait_for_pending(handle)).pending

    applied = await handle.execute_update(
        UPDATE_DECIDE,
        {"call_id": pending.call_id, "approved": True, "approver": "alice", "reason": "fine"},
        result_type=DecideResult,
    )
    report = await handle.result()

    [decision] = applied.decisions
    assert (decision.call_id, decision.tool, decision.approved) == (
        pending.call_id,
        "write_file",
        True,
    )
    assert (decision.approver, decision.reason) == ("alice", "fine")
    assert report.decisions == applied.decisions
    assert (turns.workspace / "a.md").read_text() == "A"


async def test_decide_validator_refuses_bad_decisions_before_history(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE_A), fake.text("saved")])
    handle = await turns.start(scripted_request(key, agent={"approvers": ["alice"]}))
    [pending] = (await wait_for_pending(handle)).pending
    events_before = len([e async for e in handle.fetch_history_events()])

    unknown = await rejected_update(handle, {"call_id": "toolu_nope", "approved": True})
    stranger = await rejected_update(
        handle, {"call_id": pending.call_id, "approved": True, "approver": "mallory"}
    )
    malformed = await rejected_update(handle, {"call_id": pending.call_id})
    bad_edit = await rejected_update(
        handle,
        {"call_id": pending.call_id, "approved": True, "approver": "alice", "input": {"x": 1}},
    )

    assert "no such pending call" in unknown
    assert "'mallory' may not decide" in stranger and "alice" in stranger
    assert "approved" in malformed
    assert "does not fit 'write_file'" in bad_edit
    events_after = len([e async for e in handle.fetch_history_events()])
    assert events_after == events_before  # nothing reached history

    # A signal from someone who is not an approver is ignored, not applied.
    await handle.signal(SIGNAL_APPROVE, {"call_id": pending.call_id, "approved": True})
    status = await handle.query("status", result_type=TurnStatus)
    assert [p.call_id for p in status.pending] == [pending.call_id]

    await handle.execute_update(
        UPDATE_DECIDE,
        {"call_id": pending.call_id, "approved": True, "approver": "alice"},
        result_type=DecideResult,
    )
    assert (await handle.result()).output == "saved"
    already = await rejected_update(handle, {"call_id": pending.call_id, "approved": True})
    assert already  # the turn is over: the update cannot be applied


async def test_star_decides_every_pending_call(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE_A, WRITE_B), fake.text("both saved")])
    handle = await turns.start(scripted_request(key))
    await wait_for_pending(handle, count=2)

    applied = await handle.execute_update(
        UPDATE_DECIDE,
        {"call_id": "*", "approved": True, "approver": "bob"},
        result_type=DecideResult,
    )
    report = await handle.result()

    assert len(applied.decisions) == 2
    assert (turns.workspace / "a.md").read_text() == "A"
    assert (turns.workspace / "b.md").read_text() == "B"
    assert [d.approver for d in report.decisions] == ["bob", "bob"]


async def test_each_pending_call_is_decided_independently(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE_A, WRITE_B), fake.text("one saved")])
    handle = await turns.start(scripted_request(key))
    first, second = (await wait_for_pending(handle, count=2)).pending

    await handle.signal(
        SIGNAL_APPROVE, {"call_id": second.call_id, "approved": False, "reason": "no"}
    )
    await handle.signal(SIGNAL_APPROVE, {"call_id": first.call_id, "approved": True})
    report = await handle.result()

    a, b = results(report)
    assert not a.is_error and b.is_error and "no" in b.text()
    assert (turns.workspace / "a.md").exists() and not (turns.workspace / "b.md").exists()
    decisions = await handle.query(QUERY_DECISIONS)
    assert {(d["call_id"], d["approved"]) for d in decisions} == {
        (first.call_id, True),
        (second.call_id, False),
    }


async def test_edit_before_approve_runs_the_edited_call_and_tells_the_model(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE_A), fake.text("saved")])
    handle = await turns.start(scripted_request(key))
    [pending] = (await wait_for_pending(handle)).pending

    edited = {"path": "reviewed.md", "content": "reviewed"}
    applied = await handle.execute_update(
        UPDATE_DECIDE,
        {"call_id": pending.call_id, "approved": True, "approver": "carol", "input": edited},
        result_type=DecideResult,
    )
    report = await handle.result()

    assert applied.decisions[0].edited
    assert (turns.workspace / "reviewed.md").read_text() == "reviewed"
    assert not (turns.workspace / "a.md").exists()
    [result] = results(report)
    assert "edited before approval by carol" in result.text()
    assert '"path": "reviewed.md"' in result.text()
    seen_by_model = turns.fake.requests_for(key)[-1].body["messages"][-1]["content"][0]
    assert "edited before approval" in str(seen_by_model["content"])


async def test_remembered_approval_lets_later_turns_run_without_asking(turns: TurnRunner) -> None:
    agent = {"id": f"agent-{new_key()}"}
    first_key, second_key = new_key(), new_key()
    turns.fake.script(first_key, [fake.tool_calls(WRITE_A), fake.text("saved")])
    turns.fake.script(second_key, [fake.tool_calls(WRITE_B), fake.text("saved again")])

    first = await turns.start(scripted_request(first_key, agent=agent))
    [pending] = (await wait_for_pending(first)).pending
    await first.signal(
        SIGNAL_APPROVE,
        {"call_id": pending.call_id, "approved": True, "remember": True, "approver": "dana"},
    )
    await first.result()
    assert [a.tool for a in await list_standing(turns.client, agent["id"])] == ["write_file"]

    second = await turns.run(scripted_request(second_key, agent=agent))

    assert (turns.workspace / "b.md").read_text() == "B"
    [decision] = second.decisions
    assert decision.standing and decision.approved and decision.tool == "write_file"

    # Revoked: the next turn asks again.
    assert await revoke(turns.client, agent["id"], "write_file", by="erin")
    third_key = new_key()
    turns.fake.script(third_key, [fake.tool_calls(WRITE_A), fake.text("-")])
    third = await turns.start(scripted_request(third_key, agent=agent))
    status = await wait_for_pending(third)
    assert status.state == "awaiting_approval"
    await third.cancel()
