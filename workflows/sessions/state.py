"""The deterministic state a session owns: the conversation's reference (and, in memory, its
messages for the `messages` query), the turn count, the cost of every turn so far and the turn
running now. Only the session workflow mutates it, through the methods below; it does no I/O."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.budget_extension import BudgetRequest
    from turnkeeper.contracts.compaction import CompactedHistory
    from turnkeeper.contracts.messages import Message
    from turnkeeper.contracts.session import (
        RECENT_TURNS,
        CarriedSession,
        SendInput,
        SessionRequest,
        SessionState,
        SessionStatus,
        SessionTurn,
        TurnStateNote,
    )
    from turnkeeper.contracts.signals import TurnState
    from turnkeeper.contracts.turn import (
        AgentReport,
        Constraints,
        Outcome,
        TaskSpec,
        TurnRequest,
    )

# Below this, what is left of a cost budget cannot pay for any model call.
_SPENT_USD = 1e-9


def turn_workflow_id(session_id: str, number: int) -> str:
    return f"{session_id}/turn-{number}"


class Session(BaseModel):
    request: SessionRequest
    started: datetime
    state: SessionState = "idle"
    turns: int = 0
    cost_usd: float = 0.0
    cost_extended_usd: float = 0.0  # granted to its turns' cost budgets by humans
    conversation_ref: str | None = None
    # How the last compacted turn's requests saw that conversation: the next turn goes on
    # from there instead of compacting the whole conversation again.
    history_compaction: CompactedHistory | None = None
    # Not carried across continue-as-new: the next run reads them back by `conversation_ref`.
    messages: list[Message] = Field(default_factory=list)
    running_turn_id: str | None = None
    running_turn_state: TurnState | None = None
    budget_request: BudgetRequest | None = None  # the running turn's, while it waits for one
    recent_turns: list[SessionTurn] = Field(default_factory=list)
    closed_reason: str | None = None

    @classmethod
    def resume(cls, request: SessionRequest, carried: CarriedSession) -> Session:
        return cls(
            request=request,
            started=carried.started,
            turns=carried.turns,
            cost_usd=carried.cost_usd,
            cost_extended_usd=carried.cost_extended_usd,
            conversation_ref=carried.conversation_ref,
            history_compaction=carried.history_compaction,
            recent_turns=list(carried.recent_turns),
        )

    def carry(self) -> CarriedSession:
        return CarriedSession(
            turns=self.turns,
            cost_usd=self.cost_usd,
            cost_extended_usd=self.cost_extended_usd,
            conversation_ref=self.conversation_ref,
            history_compaction=self.history_compaction,
            recent_turns=list(self.recent_turns),
            started=self.started,
        )

    def cost_left_usd(self) -> float | None:
        budget = self.request.constraints.cost_budget_usd
        return None if budget is None else budget + self.cost_extended_usd - self.cost_usd

    def refusal_to_send(self) -> str | None:
        """Why a `send` cannot start a turn now, in one sentence; None when it can."""
        if self.state == "closed":
            return f"session {self.request.session_id} is closed; start a new session"
        if self.running_turn_id is not None:
            # Refused, not queued: the next message belongs after the answer the user has not
            # read yet, and a refusal costs nothing while a queue would need its own bounds.
            return (
                f"turn {self.running_turn_id} is still running; send the next message when it "
                "has finished (one turn at a time)"
            )
        left = self.cost_left_usd()
        if left is not None and left < _SPENT_USD:
            budget = self.request.constraints.cost_budget_usd
            extended = (
                f" and ${self.cost_extended_usd:g} extended" if self.cost_extended_usd else ""
            )
            return (
                f"the session's cost budget of ${budget:g}{extended} is spent "
                f"(${self.cost_usd:.6f} over {self.turns} turns); start a new session with a "
                "larger budget"
            )
        return None

    def refusal_to_close(self) -> str | None:
        if self.state == "closed":
            return f"session {self.request.session_id} is already closed"
        if self.running_turn_id is not None:
            return (
                f"turn {self.running_turn_id} is still running; wait for it, or cancel it "
                f"(temporal workflow cancel --workflow-id {self.running_turn_id}), then close"
            )
        return None

    def begin_turn(self, send: SendInput) -> TurnRequest:
        """Counts the next turn and returns its request: the session's agent, the constraints of
        the send over the session's, what is left of the cost budget, and the conversation so
        far by reference."""
        self.turns += 1
        self.running_turn_id = turn_workflow_id(self.request.session_id, self.turns)
        self.running_turn_state = "running"
        self.state = "running"
        return TurnRequest(
            agent=self.request.agent,
            task=TaskSpec(
                id=self.running_turn_id,
                input=send.input,
                constraints=self._turn_constraints(send.constraints),
            ),
            history_ref=self.conversation_ref,
            history_compaction=self.history_compaction if self.conversation_ref else None,
            tenant=self.request.tenant,
        )

    def turn_not_started(self) -> None:
        """Undoes `begin_turn` when the turn's workflow could not be started."""
        self.turns -= 1
        self.running_turn_id = None
        self.running_turn_state = None
        self.state = "idle"

    def turn_reported(self, note: TurnStateNote) -> bool:
        """The running turn started or stopped waiting for a human; False for a note of a turn
        that is not running (any more)."""
        if note.turn_workflow_id != self.running_turn_id:
            return False
        self.running_turn_state = note.state
        self.budget_request = note.budget_request
        return True

    def count_extensions(self, report: AgentReport) -> None:
        """A human who extends a turn's cost budget extends the conversation's: without it, the
        session would refuse the next message for the very money that human granted."""
        self.cost_extended_usd += sum(e.cost_usd or 0.0 for e in report.budget_extensions)

    def record_answer(self, report: AgentReport) -> None:
        """A finished turn. Its exchange joins the conversation when it ends with an answer; a
        last message that still asks for tools (cut by max_tokens) would make every later
        request invalid."""
        last = report.messages[-1] if report.messages else None
        joins = (
            report.conversation_ref is not None
            and last is not None
            and last.role == "assistant"
            and not last.tool_uses()
        )
        if joins:
            self.conversation_ref = report.conversation_ref
            self.history_compaction = report.history_compaction
            self.messages.extend(report.messages)
        self._turn_ended(report.outcome, report.cost_usd, None, joined=joins)

    def record_failure(self, error_type: str, partial: AgentReport | None) -> None:
        """A failed or cancelled turn: its cost counts, its exchange stays out of the
        conversation (the user can send the message again)."""
        outcome: Outcome = "cancelled" if error_type == errors.TURN_CANCELLED else "failed"
        cost = partial.cost_usd if partial is not None else 0.0
        self._turn_ended(outcome, cost, error_type, joined=False)

    def close(self, reason: str) -> None:
        self.state = "closed"
        self.closed_reason = reason

    def status(self) -> SessionStatus:
        return SessionStatus(
            state=self.state,
            session_id=self.request.session_id,
            agent_id=self.request.agent.id,
            turns=self.turns,
            cost_usd=round(self.cost_usd, 10),
            cost_budget_usd=self.request.constraints.cost_budget_usd,
            running_turn_id=self.running_turn_id,
            running_turn_state=self.running_turn_state,
            budget_request=self.budget_request,
            cost_extended_usd=round(self.cost_extended_usd, 10),
            conversation_ref=self.conversation_ref,
            messages=len(self.messages),
            recent_turns=list(self.recent_turns),
            started=self.started,
            closed_reason=self.closed_reason,
        )

    def _turn_ended(
        self, outcome: Outcome, cost: float, error_type: str | None, *, joined: bool
    ) -> None:
        assert self.running_turn_id is not None
        self.cost_usd += cost
        ended = SessionTurn(
            number=self.turns,
            turn_workflow_id=self.running_turn_id,
            outcome=outcome,
            cost_usd=round(cost, 10),
            error_type=error_type,
            joined_conversation=joined,
        )
        self.recent_turns = [*self.recent_turns, ended][-RECENT_TURNS:]
        self.running_turn_id = None
        self.running_turn_state = None
        self.budget_request = None
        self.state = "idle"

    def _turn_constraints(self, overrides: Constraints | None) -> Constraints:
        fields = self.request.constraints.model_dump()
        if overrides is not None:
            fields.update(overrides.model_dump(exclude_unset=True))
        left = self.cost_left_usd()
        if left is not None:
            asked = fields.get("cost_budget_usd")
            fields["cost_budget_usd"] = left if asked is None else min(asked, left)
        return Constraints.model_validate(fields)
