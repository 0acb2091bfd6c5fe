"""Tool calls that wait for a human decision or a caller's result."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.messages import ToolUseBlock
    from contracts.signals import (
        ApproveInput,
        PendingCall,
        PendingKind,
        SubmitToolResultInput,
        TurnState,
    )


@dataclass
class Waiting:
    use: ToolUseBlock
    kind: PendingKind
    since: datetime
    decision: ApproveInput | None = None
    result: SubmitToolResultInput | None = None

    @property
    def settled(self) -> bool:
        return (self.decision if self.kind == "approval" else self.result) is not None


class PendingCalls:
    """The book of waiting calls. A call id is settled at most once; later signals for it are
    reported as stale so the handler can log and ignore them."""

    def __init__(self) -> None:
        self._waiting: dict[str, Waiting] = {}
        self._settled: set[str] = set()

    def open(self, use: ToolUseBlock, kind: PendingKind, now: datetime) -> Waiting:
        waiting = Waiting(use=use, kind=kind, since=now)
        self._waiting[use.id] = waiting
        return waiting

    def close(self, call_id: str) -> None:
        self._waiting.pop(call_id, None)
        self._settled.add(call_id)

    def why_not(self, call_id: str, kind: PendingKind) -> str | None:
        """None when a signal of `kind` for `call_id` applies now, else the reason it does not."""
        waiting = self._waiting.get(call_id)
        if waiting is not None and waiting.kind == kind and not waiting.settled:
            return None
        if call_id in self._settled or (waiting is not None and waiting.settled):
            return "already decided"
        if waiting is not None:
            wanted = "a decision" if waiting.kind == "approval" else "a result"
            return f"the call waits for {wanted}"
        return "no such pending call"

    def decide(self, decision: ApproveInput) -> None:
        self._waiting[decision.call_id].decision = decision

    def submit(self, result: SubmitToolResultInput) -> None:
        self._waiting[result.call_id].result = result

    def state(self) -> TurnState:
        kinds = {waiting.kind for waiting in self._waiting.values()}
        if "approval" in kinds:
            return "awaiting_approval"
        if "external" in kinds:
            return "awaiting_external"
        return "running"

    def listing(self) -> list[PendingCall]:
        return [
            PendingCall(
                call_id=w.use.id, tool=w.use.name, input=w.use.input, kind=w.kind, since=w.since
            )
            for w in self._waiting.values()
        ]
