"""`TurnHandle.wait_for_approval` over a stubbed status query: the waiting call it returns, and
the clear errors when none comes in time or the turn ends first."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from turnkeeper.contracts.signals import PendingCall, TurnStatus
from turnkeeper.contracts.turn import AgentReport

from turnkeeper.client.client import TurnHandle


class StubWorkflow:
    """Answers the status query with the next of `statuses` (the last one over and over)."""

    id = "turn-1"

    def __init__(self, *statuses: TurnStatus) -> None:
        self.statuses = list(statuses)

    async def query(self, *_: Any, **__: Any) -> TurnStatus:
        return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]

    async def result(self) -> AgentReport:
        return AgentReport(agent_id="a", task_id="t", outcome="completed")


def waiting(tool: str, kind: str = "approval") -> PendingCall:
    return PendingCall(call_id=f"c-{tool}", tool=tool, input={}, kind=kind, since=datetime.now(UTC))


def handle(*statuses: TurnStatus) -> TurnHandle:
    return TurnHandle(None, StubWorkflow(*statuses))  # type: ignore[arg-type]


async def test_it_returns_the_first_call_waiting_for_an_approval_of_the_tool_asked() -> None:
    statuses = (
        TurnStatus(state="running"),
        TurnStatus(state="awaiting_external", pending=[waiting("ask", "external")]),
        TurnStatus(state="awaiting_approval", pending=[waiting("lookup"), waiting("refund")]),
    )
    call = await handle(*statuses).wait_for_approval(timeout=5, tool="refund")
    assert call.call_id == "c-refund"


async def test_no_approval_in_time_is_a_timeout_naming_the_turn() -> None:
    with pytest.raises(TimeoutError, match=r"turn turn-1: no call waited for an approval within"):
        await handle(TurnStatus(state="running")).wait_for_approval(timeout=0.2)


async def test_a_turn_that_ends_first_says_how_it_ended() -> None:
    with pytest.raises(LookupError, match=r"ended \(completed\) without a refund call waiting"):
        await handle(TurnStatus(state="completed")).wait_for_approval(tool="refund")
