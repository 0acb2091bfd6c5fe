"""The one observer of a turn: the loop tells it each step once, and it reports the step on
every channel that shows it. The channels are the turn record (structlog events through
`workflow.logger`, `turn_record.py`), the live event stream, the search attributes and current
details (`turn_view.py`), the session's note of the turn's waits (`session_notes.py`), the
turn's span (`turn_tracing.py`) and its metrics (`turn_metrics.py`).

Adding a step is one method here and one call in the loop; adding a channel is one line in
each method that should reach it. Every channel is replay-safe on its own: the logger and the
span are silent while history replays, the metrics drop what is recorded during a replay, and
the stream and search attributes are workflow state.

A step makes at most one search-attribute upsert (each is a history event, a visibility write
and, on Temporal Cloud, a billed action): `TurnView.publish` is called once per step, and the
turn's identity travels in the first one.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.activity_io import ModelCallResult
    from turnkeeper.contracts.budget_extension import BudgetExtension, BudgetRequest
    from turnkeeper.contracts.compaction import CompactionSpec
    from turnkeeper.contracts.guardrails import GuardrailDecision
    from turnkeeper.contracts.mcp import McpTaskHandle
    from turnkeeper.contracts.messages import ToolResultBlock, ToolUseBlock
    from turnkeeper.contracts.policies import PolicyDecision
    from turnkeeper.contracts.signals import DecisionRecord
    from turnkeeper.contracts.steering import Intervention
    from turnkeeper.contracts.turn import AgentReport, SubagentRecord
    from turnkeeper.workflows.approvals.pending import PendingCalls
    from turnkeeper.workflows.observation import turn_metrics
    from turnkeeper.workflows.observation import turn_record as record
    from turnkeeper.workflows.observation.session_notes import SessionNotes
    from turnkeeper.workflows.observation.turn_tracing import TurnSpan
    from turnkeeper.workflows.observation.turn_view import TurnView
    from turnkeeper.workflows.subagents.relay import ParentNotes
    from turnkeeper.workflows.turn_state import Turn


class TurnObserver:
    def __init__(self, view: TurnView, pending: PendingCalls) -> None:
        self.view = view
        self._pending = pending
        self._session = SessionNotes()
        self.parent = ParentNotes()  # of a sub-agent's turn: what its parent was told
        self._span = TurnSpan(None)

    def watch(self, span: TurnSpan) -> None:
        """The span of this run, open around the whole of it."""
        self._span = span

    # ---- the turn -------------------------------------------------------------------------

    def turn_started(self, turn: Turn) -> None:
        request = turn.request
        self.view.identify(turn)
        self._show(turn)
        record.emit(
            "turn_started",
            agent_id=request.agent.id,
            task_id=request.task.id,
            model=request.agent.model,
        )
        self.view.event("turn_started", turn, model=request.agent.model)

    def turn_resumed(self, turn: Turn) -> None:
        """A run that goes on with a turn carried across continue-as-new."""
        self._show(turn)

    def turn_described(self, turn: Turn) -> None:
        request = turn.request
        self._span.describe(request.agent.id, request.task.id, request.agent.model)

    def turn_completed(self, turn: Turn, report: AgentReport) -> None:
        self._show(turn)
        self.view.event("turn_finished", turn, outcome=report.outcome, cost_usd=report.cost_usd)
        self._ended(report)

    def turn_failed(self, turn: Turn, report: AgentReport, error_type: str, message: str) -> None:
        """A typed failure (`failures.fail`), whose report was taken as it failed."""
        self._show(turn)
        record.turn_failed(report, error_type, message)
        self._ended(report, error_type)
        self.view.event("turn_failed", turn, error_type=error_type, message=message)

    def turn_cancelled(self, turn: Turn, report: AgentReport) -> None:
        self._show(turn)
        self.view.event("turn_finished", turn, outcome="cancelled")
        self._ended(report)

    def turn_interrupted(self, turn: Turn, report: AgentReport, interrupt: Intervention) -> None:
        """An `interrupt` stopped the turn at a safe point; its report is the outcome."""
        self._show(turn)
        record.emit("interrupted", author=interrupt.author, reason=interrupt.text)
        self.view.event("interrupted", turn, author=interrupt.author, reason=interrupt.text)
        self.view.event("turn_finished", turn, outcome=report.outcome, cost_usd=report.cost_usd)
        self._ended(report)

    def turn_broke(self, turn: Turn, report: AgentReport, error_type: str) -> None:
        """A defect of ours ended the turn (TurnInternalError)."""
        self._show(turn)
        self._ended(report, error_type)

    def request_refused(self, report: AgentReport, error_type: str, message: str) -> None:
        """The request never became a turn: only the record and the span hear of it."""
        record.turn_failed(report, error_type, message)
        self._ended(report, error_type)

    def _ended(self, report: AgentReport, error_type: str | None = None) -> None:
        """The channels every ending reaches: the record's counters, the metrics, the span."""
        record.turn_completed(report, error_type)
        turn_metrics.turn_ended(report, error_type)
        self._span.finish(report, error_type)

    def continuing_as_new(self, turn: Turn) -> None:
        workflow.logger.info(
            "turn continues as new",
            extra={"iteration": turn.iteration, "llm_calls": turn.spend.model_calls},
        )

    # ---- model calls ----------------------------------------------------------------------

    def iteration_started(self, turn: Turn) -> None:
        self.view.event("iteration_started", turn)

    def model_skipped(self, turn: Turn, model: str, reason: str) -> None:
        """A model of the fallback chain was passed over: the event says which and why."""
        self.view.event("model_skipped", turn, model=model, reason=reason)

    def model_call_finished(self, turn: Turn, result: ModelCallResult) -> None:
        self._show(turn)
        last = turn.messages[-1]
        self.view.event(
            "model_call_finished",
            turn,
            model=result.model,
            stop_reason=result.stop_reason,
            call_cost_usd=result.cost_usd,
            text=last.text() or None,
        )
        self.view.budget_event(turn)

    def compacted(
        self,
        turn: Turn,
        spec: CompactionSpec,
        trigger: str,
        removed: int,
        tokens: tuple[int, int],
    ) -> None:
        """Earlier messages were left out (`removed` of them); `tokens` before and after."""
        before, after = tokens
        kept = len(turn.sent_messages())
        record.emit(
            "compacted",
            strategy=spec.strategy,
            trigger=trigger,
            removed_messages=removed,
            max_input_tokens=spec.max_input_tokens,
            tokens_before=before,
            kept_messages=kept,
            tokens_after=after,
        )
        self.view.event(
            "compacted",
            turn,
            strategy=spec.strategy,
            trigger=trigger,
            removed_messages=removed,
            kept_messages=kept,
            tokens_before=before,
            tokens_after=after,
            max_input_tokens=spec.max_input_tokens,
        )

    def steered(self, turn: Turn, steer: Intervention) -> None:
        """A steer joined the conversation, just before this iteration's model call."""
        record.emit("steered", author=steer.author, chars=len(steer.text))
        self.view.event("steered", turn, author=steer.author, text=steer.text)

    # ---- tool calls -----------------------------------------------------------------------

    def tool_call_started(self, turn: Turn, use: ToolUseBlock) -> None:
        self.view.event("tool_call_started", turn, call_id=use.id, tool=use.name, input=use.input)

    def tool_call_finished(self, turn: Turn, use: ToolUseBlock, result: ToolResultBlock) -> None:
        self.view.event(
            "tool_call_finished", turn, call_id=use.id, tool=use.name, is_error=result.is_error
        )

    def mcp_task_changed(self, turn: Turn, use: ToolUseBlock, task: McpTaskHandle) -> None:
        """An MCP server answered the call with a task, or the task's status changed."""
        fields = {"call_id": use.id, "tool": use.name, "mcp_task_id": task.task_id}
        record.emit("mcp_task_status", status=task.status, server=task.server, **fields)
        self.view.event(
            "mcp_task_status", turn, mcp_task_status=task.status, text=task.status_message, **fields
        )

    def subagent_started(self, turn: Turn, use: ToolUseBlock, workflow_id: str) -> None:
        record.emit(
            "subagent_started", call_id=use.id, tool=use.name, child_workflow_id=workflow_id
        )
        self.view.event(
            "subagent_started", turn, call_id=use.id, tool=use.name, workflow_id=workflow_id
        )

    def subagent_finished(
        self, turn: Turn, use: ToolUseBlock, ended: SubagentRecord, error: tuple[str, str] | None
    ) -> None:
        """A child turn ended; `error` is its failure's type and message when it failed."""
        error_type, message = error or (None, None)
        record.emit(
            "subagent_finished",
            call_id=use.id,
            tool=use.name,
            child_workflow_id=ended.workflow_id,
            outcome=ended.outcome,
            cost_usd=ended.cost_usd,
            error_type=error_type,
        )
        self.view.event(
            "subagent_finished",
            turn,
            call_id=use.id,
            tool=use.name,
            workflow_id=ended.workflow_id,
            outcome=ended.outcome,
            is_error=error is not None,
            error_type=error_type,
            message=message,
        )
        self._show(turn)

    def call_waits(self, turn: Turn) -> None:
        """A call began or stopped waiting for a human or a caller."""
        self._show(turn)

    def policy_decided(self, turn: Turn, decision: PolicyDecision) -> None:
        """A tool call was checked against the worker's policies, before it runs or waits."""
        fields = decision.model_dump(exclude={"policy_hash"})
        record.emit("policy_decision", policy_hash=decision.policy_hash, **fields)
        self.view.event("policy_decision", turn, **fields)
        self._span.policy_decided(turn.policies.policy_decisions)
        self._show(turn)

    def approval_requested(self, turn: Turn, use: ToolUseBlock) -> None:
        record.emit("approval_requested", call_id=use.id, tool=use.name)
        self.view.event("approval_requested", turn, call_id=use.id, tool=use.name, input=use.input)

    def approval_decided(self, turn: Turn, decided: DecisionRecord, waited_s: float) -> None:
        decision = {
            "call_id": decided.call_id,
            "tool": decided.tool,
            "approved": decided.approved,
            "approver": decided.approver,
            "reason": decided.reason,
        }
        record.emit("approval_decided", waited_s=waited_s, **decision)
        turn_metrics.approval_waited(decided.tool, decided.approved, waited_s)
        self.view.event("approval_decided", turn, **decision)

    # ---- guardrails -----------------------------------------------------------------------

    def guardrail_decided(self, turn: Turn, decision: GuardrailDecision) -> None:
        """A guardrail judged the input, a tool result or the answer (enforced or log-only)."""
        fields = decision.model_dump(exclude_defaults=True)
        record.emit("guardrail_decision", **fields)
        self.view.event("guardrail_decision", turn, **fields)
        self._span.guardrail_decided(turn.guardrails.guardrail_decisions)

    # ---- budgets --------------------------------------------------------------------------

    def budget_exhausted(self, turn: Turn, request: BudgetRequest) -> None:
        record.emit(
            "budget_exhausted",
            request=request.number,
            budget=request.budget,
            detail=request.message,
        )
        self.view.event("budget_exhausted", turn, budget=request.budget, message=request.message)
        self._show(turn)

    def budget_wait_ended(self, turn: Turn) -> None:
        """No extension came in time."""
        self._show(turn)

    def budget_extended(self, turn: Turn, granted: BudgetExtension) -> None:
        extension = {
            "budget": granted.budget,
            "approver": granted.approver,
            "reason": granted.reason,
        }
        record.emit("budget_extended", request=granted.request, **extension)
        self.view.event("budget_extended", turn, **extension)
        self._show(turn)

    # ---- shared ---------------------------------------------------------------------------

    def _show(self, turn: Turn) -> None:
        """Search attributes, current details and the session's note, as of this step. The
        turn's state is what it waits for, so it is brought up to date first."""
        turn.follow_waits(self._pending.state())
        self.view.publish(turn, turn.state, self._pending.listing(), self._pending.waits.listing())
        self._session.tell(turn)
        self.parent.tell(turn, self._pending.listing())
