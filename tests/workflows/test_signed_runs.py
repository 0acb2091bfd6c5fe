"""Signatures bound to one turn (signing format 3) and an approver's signed cancel, on a real
server: a decision, steer, interrupt or cancel signed for one turn is refused by the next turn
started under the same workflow id (same call id, same input: format 2 took them), while fresh
signatures work; a keyed turn is cancelled only by an approver's signature, and then ends as a
Temporal cancellation ends it."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import CancelledError
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.runtime.turn_cancel import cancel_turn
from turnkeeper.contracts.decision_signing import SIGNING_VERSION, public_key_line
from turnkeeper.contracts.names import (
    QUERY_STATUS,
    SIGNAL_APPROVE,
    UPDATE_CANCEL,
    UPDATE_DECIDE,
    UPDATE_INTERRUPT,
    UPDATE_STEER,
)
from turnkeeper.contracts.signals import ApproveInput, TurnStatus
from turnkeeper.contracts.steering import (
    CancelInput,
    CancelTurnInput,
    InterruptInput,
    SteerInput,
)

from tests.conftest import TurnRunner, new_key, scripted_request, wait_for_pending
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from turnkeeper.client.client import turn
from turnkeeper.client.errors import DecisionRefused
from turnkeeper.client.signatures import signed_decision, signed_intervention

WRITE = ("write_file", {"path": "out.md", "content": "hello"})
LIFETIME = timedelta(minutes=10)
WRITER = {"tools": ["write_file"]}


def keyed(script: str, alice: Ed25519PrivateKey, **agent: Any) -> dict[str, Any]:
    approvers = [{"name": "alice", "public_key": public_key_line(alice)}]
    return scripted_request(
        script, agent={"id": "run-bound", "tools": ["write_file"], "approvers": approvers, **agent}
    )


async def status_of(handle: WorkflowHandle) -> TurnStatus:
    return await handle.query(QUERY_STATUS, result_type=TurnStatus)


async def captured_from(
    handle: WorkflowHandle, alice: Ed25519PrivateKey
) -> dict[str, dict[str, Any]]:
    """What an onlooker copies from turn A (its history, `--print` output): a signed decision on
    its waiting call, and a signed steer, interrupt and cancel, all for A."""
    status = await wait_for_pending(handle)
    [call] = status.pending
    decision = ApproveInput(call_id=call.call_id, approved=True, approver="alice")
    payloads = {
        "decide": signed_decision(decision, status, handle.id, alice, LIFETIME),
        UPDATE_STEER: signed_intervention(
            SteerInput(message="Write MALLORY instead.", author="alice"),
            status,
            handle.id,
            alice,
            LIFETIME,
        ),
        UPDATE_INTERRUPT: signed_intervention(
            InterruptInput(reason="stop", author="alice"), status, handle.id, alice, LIFETIME
        ),
        UPDATE_CANCEL: signed_intervention(
            CancelInput(reason="stop", author="alice"), status, handle.id, alice, LIFETIME
        ),
    }
    return {name: p.model_dump(mode="json", exclude_none=True) for name, p in payloads.items()}


async def test_signatures_of_one_turn_are_refused_by_the_next_turn_of_its_workflow_id(
    turns: TurnRunner,
) -> None:
    alice, script = Ed25519PrivateKey.generate(), new_key()
    turns.fake.script(script, [fake.tool_calls(WRITE), fake.text("Done.")])
    workflow_id = f"turn-{uuid.uuid4()}"
    first = await turns.start(keyed(script, alice), workflow_id)
    copied = await captured_from(first, alice)
    first_status = await status_of(first)
    await first.execute_update(UPDATE_DECIDE, copied["decide"])
    assert (await first.result()).output == "Done."

    # The next turn under the same id: the same script, so the same call id and input.
    turns.fake.script(script, [fake.tool_calls(WRITE), fake.text("Done.")])
    second = await turns.start(keyed(script, alice), workflow_id)
    status = await wait_for_pending(second)
    assert status.pending[0].call_id == first_status.pending[0].call_id
    assert status.pending[0].input == first_status.pending[0].input
    assert (status.signing_version, first_status.signing_version) == (SIGNING_VERSION,) * 2
    assert status.first_run_id == second.first_execution_run_id != first_status.first_run_id

    await second.signal(SIGNAL_APPROVE, copied["decide"])
    refused = await until(
        lambda: status_of(second), lambda s: s.refused_decisions, "the copied approve refused"
    )
    assert "does not verify" in refused.refused_decisions[-1].reason
    for update in (UPDATE_DECIDE, UPDATE_STEER, UPDATE_INTERRUPT, UPDATE_CANCEL):
        with pytest.raises(DecisionRefused, match="does not verify"):
            await turn(turns.client, workflow_id)._update(update, copied[update], dict)

    untouched = await status_of(second)
    assert untouched.state == "awaiting_approval" and untouched.interventions == []
    handle = turn(turns.client, workflow_id)
    await handle.steer("Keep it short.", author="alice", key=alice)
    await handle.approve(approver="alice", key=alice)
    report = await second.result()
    assert report.output == "Done."
    assert [(i.kind, i.text, i.signed) for i in report.interventions] == [
        ("steer", "Keep it short.", True)
    ]
    assert [d.signed for d in report.decisions] == [True]


async def test_a_keyed_turn_is_cancelled_only_by_an_approvers_signature(
    turns: TurnRunner,
) -> None:
    alice, mallory, script = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate(), new_key()
    turns.fake.script(script, [fake.tool_calls(WRITE), fake.text("never")])
    started = await turns.start(keyed(script, alice))
    await wait_for_pending(started)
    handle = turn(turns.client, started.id)

    with pytest.raises(DecisionRefused, match="the cancel is not signed"):
        await handle._update(UPDATE_CANCEL, {"reason": "x", "author": "alice"}, dict)
    with pytest.raises(DecisionRefused, match="does not verify"):
        await handle.cancel("as alice", author="alice", key=mallory)
    with pytest.raises(DecisionRefused, match="'mallory' may not cancel"):
        await handle.cancel("as mallory", author="mallory", key=mallory)
    assert (await status_of(started)).state == "awaiting_approval"

    await handle.cancel("wrong workspace", author="alice", key=alice)

    with pytest.raises(WorkflowFailureError) as failure:
        await started.result()
    assert isinstance(failure.value.cause, CancelledError)
    assert (await started.describe()).status == WorkflowExecutionStatus.CANCELED
    partial = await status_of(started)
    assert partial.state == "cancelled" and partial.llm_calls == 1
    assert [(i.kind, i.author, i.text, i.signed) for i in partial.interventions] == [
        ("cancel", "alice", "wrong workspace", True)
    ]
    with pytest.raises(DecisionRefused, match="has ended"):
        await handle.cancel("again", author="alice", key=alice)


def writer_subagent(child: str, **agent: Any) -> dict[str, Any]:
    """The `writer` sub-agent a lead delegates to, scripted by `child`'s marker."""
    return {
        "name": "writer",
        "description": "Writes files.",
        "agent": {
            "id": "writer",
            "model": "anthropic:claude-sonnet-4-6",
            "system_prompt": f"You are the writer. {fake.script_marker(child)}",
            "tools": ["write_file"],
            **agent,
        },
    }


async def test_a_signed_cancel_of_a_lead_cancels_its_sub_agent(turns: TurnRunner) -> None:
    alice, lead, child = Ed25519PrivateKey.generate(), new_key(), new_key()
    turns.fake.script(lead, [fake.tool_calls(("writer", {"task": "save it"}))])
    turns.fake.script(child, [fake.tool_calls(WRITE), fake.text("ok")])
    writer = writer_subagent(child)
    started = await turns.start(keyed(lead, alice, subagents=[writer]))
    sub = turns.client.get_workflow_handle(f"{started.id}/writer-1")
    await wait_for_pending(sub)

    await turn(turns.client, started.id).cancel("enough", author="alice", key=alice)

    with pytest.raises(WorkflowFailureError):
        await started.result()
    assert (await started.describe()).status == WorkflowExecutionStatus.CANCELED
    assert (await sub.describe()).status == WorkflowExecutionStatus.CANCELED
    status = await status_of(started)
    assert [(s.name, s.outcome) for s in status.subagents] == [("writer", "cancelled")]


async def test_the_cancel_activity_reaches_only_the_turn_of_its_first_run(
    turns: TurnRunner,
) -> None:
    script = new_key()
    turns.fake.script(script, [fake.tool_calls(WRITE), fake.text("Done.")])
    workflow_id, request = f"turn-{uuid.uuid4()}", scripted_request(script, agent=WRITER)
    ended = await turns.start(request, workflow_id)
    await wait_for_pending(ended)
    await turn(turns.client, workflow_id).approve(approver="alice")
    await ended.result()
    turns.fake.script(script, [fake.tool_calls(WRITE), fake.text("Done.")])
    running = await turns.start(request, workflow_id)
    await wait_for_pending(running)
    assert ended.first_execution_run_id and running.first_execution_run_id
    activities = ActivityEnvironment(client=turns.client)

    # A request made for the ended turn: "not found" for it, nothing for the running one.
    await activities.run(cancel_turn, target(workflow_id, ended.first_execution_run_id))
    assert (await running.describe()).status == WorkflowExecutionStatus.RUNNING
    await activities.run(cancel_turn, target(workflow_id, running.first_execution_run_id))
    with pytest.raises(WorkflowFailureError):
        await running.result()
    assert (await running.describe()).status == WorkflowExecutionStatus.CANCELED


def target(workflow_id: str, first_run_id: str) -> CancelTurnInput:
    return CancelTurnInput(workflow_id=workflow_id, first_run_id=first_run_id, reason="test")


async def test_a_signed_decision_on_a_sub_agents_call_binds_the_childs_first_run(
    turns: TurnRunner,
) -> None:
    alice, lead, child = Ed25519PrivateKey.generate(), new_key(), new_key()
    turns.fake.script(lead, [fake.tool_calls(("writer", {"task": "save it"})), fake.text("done")])
    turns.fake.script(child, [fake.tool_calls(WRITE), fake.text("ok")])
    approvers = [{"name": "alice", "public_key": public_key_line(alice)}]
    writer = writer_subagent(child, approvers=approvers)
    started = await turns.start(scripted_request(lead, agent={"subagents": [writer]}))
    status = await wait_for_pending(started)
    [call] = status.pending
    sub = turns.client.get_workflow_handle(f"{started.id}/writer-1")
    child_status = await status_of(sub)
    assert call.first_run_id == child_status.first_run_id != status.first_run_id
    handle = turn(turns.client, started.id)
    # Signed for the lead's own run: the child, where the call is decided, refuses it.
    misbound = status.model_copy(
        update={"pending": [call.model_copy(update={"first_run_id": status.first_run_id})]}
    )
    decision = ApproveInput(call_id=call.call_id, approved=True, approver="alice")
    wrong = signed_decision(decision, misbound, started.id, alice, LIFETIME)
    await started.signal(SIGNAL_APPROVE, wrong.model_dump(mode="json"))
    refused = await until(
        lambda: status_of(sub), lambda s: s.refused_decisions, "the misbound decision refused"
    )
    assert "does not verify" in refused.refused_decisions[-1].reason

    await handle.approve(call.call_id, approver="alice", key=alice)
    report = await started.result()

    assert report.output == "done" and report.tool_calls == 1
    assert (turns.workspace / "out.md").read_text() == "hello"
