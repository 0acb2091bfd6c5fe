"""`waiting_approvals`: each waiting call listed once, as its root turn lists it, with the
task, the words before it and the budgets left of the turn where it waits."""

from __future__ import annotations

from turnkeeper.contracts.signals import PendingCall, TurnStatus
from turnkeeper.contracts.turn import ParentTurn, TurnRequest

from tests.unit.builders import constraints, request
from tests.unit.http.fake_turns import SINCE
from turnkeeper.client.turns import WaitingTurn
from turnkeeper.http.approvals import waiting_approvals
from turnkeeper.http.errors import no_turn
from turnkeeper.http.origins import StartedTurn

ROOT, CHILD = "lead-1", "lead-1/writer-1"


def call(call_id: str, workflow_id: str | None = None, kind: str = "approval") -> PendingCall:
    return PendingCall.model_validate(
        {
            "call_id": call_id,
            "tool": "write_file",
            "input": {"path": "a.md", "content": "x\ny"},
            "kind": kind,
            "since": SINCE,
            "workflow_id": workflow_id,
            "agent_id": "writer-agent" if workflow_id else None,
            "said": f"said before {call_id}",
        }
    )


def waiting(workflow_id: str, cost: float, *pending: PendingCall) -> WaitingTurn:
    status = TurnStatus(
        state="awaiting_approval", cost_usd=cost, elapsed_ms=1000, iteration=2, pending=[*pending]
    )
    return WaitingTurn(workflow_id=workflow_id, agent_id="a", started=SINCE, status=status)


REQUESTS: dict[str, TurnRequest] = {
    ROOT: request(task={"input": "Prepare the handover.", **constraints(cost_budget_usd=1.0)}),
    CHILD: request(
        task={"input": "Write the note.", **constraints(cost_budget_usd=0.5, time_budget_ms=4000)},
        parent=ParentTurn(workflow_id=ROOT, call_id="c", depth=1),
    ),
}


async def started(workflow_id: str) -> StartedTurn:
    if workflow_id not in REQUESTS:
        raise no_turn(workflow_id)
    return StartedTurn(REQUESTS[workflow_id], "alice", "run-1")


async def test_a_sub_agents_call_is_listed_once_at_its_root() -> None:
    root = waiting(ROOT, 0.25, call("own"), call("below", CHILD), call("ext", kind="external"))
    child = waiting(CHILD, 0.1, call("below"))
    listed = await waiting_approvals([child, root], started)
    assert [(a.workflow_id, a.call_id, a.waits_in, a.depth) for a in listed] == [
        (ROOT, "own", None, 0),
        (ROOT, "below", CHILD, 1),
    ]
    own, below = listed
    assert own.task == own.root_task == "Prepare the handover." and own.said == "said before own"
    assert own.budget is not None and own.budget.cost_left_usd == 0.75
    assert own.budget.time_budget_ms is None and own.budget.time_left_ms is None
    assert below.task == "Write the note." and below.root_task == "Prepare the handover."
    assert below.agent_id == "writer-agent" and below.started_by == "alice"
    assert below.budget is not None and below.budget.cost_usd == 0.1
    assert below.budget.cost_left_usd == 0.4 and below.budget.time_left_ms == 3000


async def test_a_sub_agent_turn_found_without_its_root_lists_nothing() -> None:
    # Decisions on it go through its root (the API cannot address a sub-agent's turn by id).
    assert await waiting_approvals([waiting(CHILD, 0.1, call("below"))], started) == []


async def test_a_turn_gone_since_the_listing_is_left_out() -> None:
    assert await waiting_approvals([waiting("gone-1", 0.0, call("x"))], started) == []


async def test_the_tasks_attachments_are_listed_without_their_bytes() -> None:
    image = {"type": "stored", "ref": "sha256:ab12", "media_type": "image/png", "size": 307200}
    sent = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"}
    blocks = [
        {"type": "text", "text": "What does the chart show?"},
        {"type": "image", "name": "chart.png", "source": image},
        {"type": "document", "source": sent},
    ]
    REQUESTS["with-files-1"] = request(task={"input": blocks})
    try:
        [listed] = await waiting_approvals([waiting("with-files-1", 0.0, call("c"))], started)
    finally:
        del REQUESTS["with-files-1"]
    assert listed.task == "What does the chart show?"
    assert [a.model_dump() for a in listed.attachments] == [
        {
            "kind": "image",
            "name": "chart.png",
            "media_type": "image/png",
            "size": 307200,
            "ref": "sha256:ab12",
        },
        {"kind": "document", "name": None, "media_type": "application/pdf", "size": 9, "ref": None},
    ]
