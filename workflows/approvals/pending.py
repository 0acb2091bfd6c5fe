"""Tool calls that wait for a human decision or a caller's result."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.mcp_elicitation import ElicitationAsked, answer_problem
    from turnkeeper.contracts.messages import ToolUseBlock
    from turnkeeper.contracts.signals import (
        ALL_PENDING,
        ApproveInput,
        PendingCall,
        PendingKind,
        SubmitToolResultInput,
        TurnState,
    )
    from turnkeeper.contracts.write_preview import WritePreview
    from turnkeeper.workflows.waits.book import Waits


@dataclass
class Waiting:
    use: ToolUseBlock
    kind: PendingKind
    since: datetime
    decision: ApproveInput | None = None
    result: SubmitToolResultInput | None = None
    # Of kind `elicitation`: the server's question, and the activity attempt that asked it.
    asked: ElicitationAsked | None = None
    attempt: int = 0
    # What the approver reads beside the call: the model's words before it, a write's diff.
    said: str | None = None
    preview: WritePreview | None = None

    @property
    def settled(self) -> bool:
        return (self.result if self.kind == "external" else self.decision) is not None


class PendingCalls:
    """The book of waiting calls. A call id is settled at most once; later signals for it are
    reported as stale so the handler can log and ignore them."""

    def __init__(self) -> None:
        self._waiting: dict[str, Waiting] = {}
        self._settled: set[str] = set()
        # The order the model asked for its calls: a write's preview (an activity) runs before
        # its call waits, so calls of one answer open in the order their previews finish. The
        # listing keeps the model's order, which is what an approver reads and `first, second`
        # of a client's code means.
        self._asked: dict[str, int] = {}
        # Calls that wait in this turn's sub-agents (and theirs), by the child that told us.
        self._relayed: dict[str, list[PendingCall]] = {}
        # The built-in `wait` tool's calls in progress and the events delivered (workflows/waits).
        self.waits = Waits()

    def expect(self, uses: list[ToolUseBlock]) -> None:
        """Notes the order of one answer's calls, before any of them waits."""
        for use in uses:
            self._asked.setdefault(use.id, len(self._asked))

    def open(
        self,
        use: ToolUseBlock,
        kind: PendingKind,
        now: datetime,
        *,
        said: str | None = None,
        preview: WritePreview | None = None,
    ) -> Waiting:
        waiting = Waiting(use=use, kind=kind, since=now, said=said, preview=preview)
        self._waiting[use.id] = waiting
        return waiting

    def close(self, call_id: str) -> None:
        self._waiting.pop(call_id, None)
        self._settled.add(call_id)

    def abandon(self) -> None:
        """The turn ended (cancelled, failed) while calls waited: none waits any more, so
        neither the status query nor the Web UI offers to decide them."""
        for call_id in list(self._waiting):
            self.close(call_id)
        self._relayed.clear()

    def relay(self, child_id: str, pending: list[PendingCall]) -> None:
        """The calls that wait in sub-agent turn `child_id` now (none: it waits for nothing)."""
        if pending:
            self._relayed[child_id] = list(pending)
        else:
            self._relayed.pop(child_id, None)

    def children_wait(self) -> bool:
        """Whether a call waits for a human or a caller in one of the turn's sub-agents."""
        return bool(self._relayed)

    def relayed(self, call_id: str) -> PendingCall | None:
        """The waiting call `call_id` of a sub-agent, or None when no sub-agent's call has it."""
        return next((c for c in self._relayed_calls() if c.call_id == call_id), None)

    def _relayed_calls(self) -> list[PendingCall]:
        return [call for calls in self._relayed.values() for call in calls]

    def why_not(self, call_id: str, kind: PendingKind) -> str | None:
        """None when a signal of `kind` for `call_id` applies now, else the reason it does not.
        A decision (`approval`) applies to a server's question (`elicitation`) too."""
        if call_id == ALL_PENDING and kind == "approval":
            return None if self._open_approvals() else "no call waits for approval"
        waiting = self._waiting.get(call_id)
        kinds = {kind, "elicitation"} if kind == "approval" else {kind}
        if waiting is not None and waiting.kind in kinds and not waiting.settled:
            return None
        if call_id in self._settled or (waiting is not None and waiting.settled):
            return "already decided"
        if waiting is not None:
            wanted = "a result" if waiting.kind == "external" else "a decision"
            return f"the call waits for {wanted}"
        return "no such pending call"

    def decision_problem(self, decision: ApproveInput, approvers: list[str] | None) -> str | None:
        """Why `decision` cannot be applied now (unknown or settled call, approver not allowed,
        an edit of several calls at once), or None."""
        problem = self.why_not(decision.call_id, "approval")
        if problem:
            return f"call {decision.call_id!r}: {problem}"
        if approvers is not None and decision.approver not in approvers:
            who = repr(decision.approver) if decision.approver else "an anonymous approver"
            return f"{who} may not decide calls of this agent (approvers: {', '.join(approvers)})"
        if decision.input is not None and decision.call_id == ALL_PENDING:
            return "an edited input applies to one call; name its call_id instead of '*'"
        waiting = self._waiting.get(decision.call_id)
        if waiting is not None and waiting.asked is not None:
            problem = answer_problem(
                waiting.asked, decision.approved, decision.remember, decision.input
            )
            return f"call {decision.call_id!r}: {problem}" if problem else None
        return None

    def decide(self, decision: ApproveInput) -> list[Waiting]:
        """Applies `decision` to its call, or to every open approval for call_id '*'."""
        if decision.call_id == ALL_PENDING:
            targets = self._open_approvals()
        else:
            targets = [self._waiting[decision.call_id]]
        for waiting in targets:
            waiting.decision = decision
        return targets

    def get(self, call_id: str) -> Waiting | None:
        return self._waiting.get(call_id)

    def _open_approvals(self) -> list[Waiting]:
        return [w for w in self._in_asked_order() if w.kind == "approval" and not w.settled]

    def submit(self, result: SubmitToolResultInput) -> None:
        self._waiting[result.call_id].result = result

    def state(self) -> TurnState:
        kinds = {waiting.kind for waiting in self._waiting.values()}
        kinds |= {call.kind for call in self._relayed_calls()}
        if "approval" in kinds or "elicitation" in kinds:  # both wait for a person's decision
            return "awaiting_approval"
        if "external" in kinds:
            return "awaiting_external"
        return "waiting" if self.waits.waiting() else "running"

    def listing(self) -> list[PendingCall]:
        return [_listed(w) for w in self._in_asked_order()] + self._relayed_calls()

    def _in_asked_order(self) -> list[Waiting]:
        last = len(self._asked)
        return sorted(self._waiting.values(), key=lambda w: self._asked.get(w.use.id, last))


def _listed(waiting: Waiting) -> PendingCall:
    use, asked = waiting.use, waiting.asked
    call = PendingCall(
        call_id=use.id,
        tool=use.name,
        input=use.input,
        kind=waiting.kind,
        since=waiting.since,
        said=waiting.said,
        preview=waiting.preview,
    )
    if asked is not None:
        call.message, call.requested_schema = asked.message, asked.requested_schema
    return call
