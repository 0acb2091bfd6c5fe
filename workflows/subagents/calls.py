"""Sub-agent calls: the model's call of a sub-agent (`agent.subagents`) runs as a child
`AgentTurnWorkflow`. The child gets what its parent has left of its budgets
(`subagents/budget.py`); its report's spend joins the parent's, and its answer (or its failure)
is the call's `tool_result`. The parent's history holds the child's start and its result, never
its transcript, so it grows with the number of calls and not with their content."""

from __future__ import annotations

import json

from temporalio import workflow
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import (
    ApplicationError,
    ChildWorkflowError,
    TemporalError,
    is_cancelled_exception,
)

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError
    from turnkeeper.contracts.messages import ToolResultBlock, ToolUseBlock
    from turnkeeper.contracts.names import WORKFLOW_TYPE
    from turnkeeper.contracts.result_limits import DEFAULT_MAX_RESULT_BYTES, capped
    from turnkeeper.contracts.search_attributes import STARTED_BY
    from turnkeeper.contracts.turn import (
        AgentReport,
        Outcome,
        ParentTurn,
        SubagentRecord,
        SubagentSpec,
        TaskSpec,
        TurnRequest,
        Usage,
    )
    from turnkeeper.workflows.approvals.pending import PendingCalls
    from turnkeeper.workflows.budgets import checks as budgets
    from turnkeeper.workflows.observation.turn_observer import TurnObserver
    from turnkeeper.workflows.subagents.budget import (
        Remaining,
        child_agent,
        child_constraints,
        shared,
        spent_problem,
    )
    from turnkeeper.workflows.subagents.relay import child_ended
    from turnkeeper.workflows.subagents.tools import TASK_SCHEMA
    from turnkeeper.workflows.turn_state import Settled, Turn

__all__ = ["TASK_SCHEMA", "SubagentCalls", "remaining", "subagent_of"]

_SUMMARY_CHARS = 100
# Before it a sub-agent's turn started with no search attribute; since, a parent that belongs to
# someone passes its `StartedBy` on, so the child belongs to the same identity.
CHILD_STARTED_BY_PATCH = "subagent-started-by"


def subagent_of(turn: Turn, tool: str) -> SubagentSpec | None:
    """The sub-agent a call of `tool` runs, or None when `tool` is not one."""
    return next((spec for spec in turn.request.agent.subagents if spec.name == tool), None)


def remaining(turn: Turn) -> Remaining:
    """What is left of the turn's budgets now (the current tool interaction already counted)."""
    time_left = budgets.time_left_ms(turn)
    interactions = budgets.limits(turn).max_tool_interactions
    return Remaining(
        time_ms=None if time_left == float("inf") else time_left,
        cost_usd=budgets.cost_left(turn),
        tool_interactions=None
        if interactions is None
        else interactions - turn.spend.tool_interactions,
    )


class SubagentCalls:
    def __init__(self, pending: PendingCalls, observer: TurnObserver) -> None:
        self._pending = pending
        self._observer = observer

    async def run(self, turn: Turn, use: ToolUseBlock, spec: SubagentSpec, share: int) -> Settled:
        """Runs one call of `spec` as a child turn; `share` is how many sub-agent calls of the
        same answer run beside it (they split the cost and tool interactions left)."""
        task = use.input.get("task")
        if not isinstance(task, str) or not task.strip():
            return _error(use, f"Sub-agent {spec.name!r} needs a task: a non-empty string.")
        left = shared(remaining(turn), share)
        spent = spent_problem(left)
        if spent:
            return _error(use, f"Sub-agent {spec.name!r} not started: {spent}.")
        k = turn.children.number_call(spec.name)
        request = _child_request(turn, use, spec, task, left, k)
        child_id = f"{workflow.info().workflow_id}/{spec.name}-{k}"
        try:
            handle = await workflow.start_child_workflow(
                WORKFLOW_TYPE,
                # Only what differs from the contract's defaults: it is in history every call.
                request.model_dump(mode="json", exclude_defaults=True),
                id=child_id,
                task_queue=workflow.info().task_queue,
                result_type=AgentReport,
                static_summary=_summary(spec, task),
                search_attributes=_child_search_attributes(turn),
            )
        except TemporalError as err:
            if is_cancelled_exception(err):
                raise
            return _error(use, f"Sub-agent {spec.name!r} could not start: {err}")
        self._observer.subagent_started(turn, use, child_id)
        try:
            report = await handle
        except ChildWorkflowError as err:
            if is_cancelled_exception(err):
                partial = turn.children.cancelled_children.get(child_id)
                self._ended(turn, use, spec, child_id, partial, "cancelled", None)
                raise
            error_type, message, partial = _failure_of(err)
            self._ended(turn, use, spec, child_id, partial, "failed", (error_type, message))
            return _error(use, f"Sub-agent {spec.name!r} failed with {error_type}: {message}")
        except BaseException as err:
            if is_cancelled_exception(err):
                partial = turn.children.cancelled_children.get(child_id)
                self._ended(turn, use, spec, child_id, partial, "cancelled", None)
            raise
        self._ended(turn, use, spec, child_id, report, report.outcome, None)
        block = ToolResultBlock(tool_use_id=use.id, content=_answer(report, spec))
        return Settled(block)

    def _ended(
        self,
        turn: Turn,
        use: ToolUseBlock,
        spec: SubagentSpec,
        child_id: str,
        report: AgentReport | None,
        outcome: Outcome,
        error: tuple[str, str] | None,
    ) -> None:
        spend = report or AgentReport(agent_id=spec.agent.id, task_id="", outcome="cancelled")
        ended = SubagentRecord(
            name=spec.name,
            workflow_id=child_id,
            outcome=outcome,
            cost_usd=spend.cost_usd,
            llm_calls=spend.llm_calls,
            tool_calls=spend.tool_calls,
        )
        turn.record_subagent(ended, spend.usage if report else Usage())
        child_ended(turn, self._pending, child_id, workflow.now())
        self._observer.subagent_finished(turn, use, ended, error)


def _child_request(
    turn: Turn, use: ToolUseBlock, spec: SubagentSpec, task: str, left: Remaining, k: int
) -> TurnRequest:
    parent = turn.request
    depth = parent.parent.depth + 1 if parent.parent is not None else 1
    return TurnRequest(
        agent=child_agent(parent.agent, spec),
        task=TaskSpec(
            id=f"{parent.task.id}/{spec.name}-{k}",
            input=task,
            constraints=child_constraints(parent.task.constraints, left, spec),
        ),
        parent=ParentTurn(workflow_id=workflow.info().workflow_id, call_id=use.id, depth=depth),
    )


def _child_search_attributes(turn: Turn) -> TypedSearchAttributes | None:
    """The child's `StartedBy`: its parent's (None, as before the patch, when it has none)."""
    if turn.started_by is None or not workflow.patched(CHILD_STARTED_BY_PATCH):
        return None
    return TypedSearchAttributes([SearchAttributePair(STARTED_BY, turn.started_by)])


def _failure_of(err: ChildWorkflowError) -> tuple[str, str, AgentReport | None]:
    """A failed child's error type, message and partial report (None when it has none)."""
    cause = err.cause
    if not isinstance(cause, ApplicationError):
        return type(cause).__name__ if cause else "ChildWorkflowError", str(cause or err), None
    try:
        partial = AgentReport.model_validate(cause.details[0]) if cause.details else None
    except ValidationError:
        partial = None
    return cause.type or "ApplicationError", cause.message, partial


def _answer(report: AgentReport, spec: SubagentSpec) -> str:
    """The child's answer as its parent's model reads it: the structured output as JSON where
    the sub-agent has a schema, else its text; capped like a worker tool's result."""
    if spec.agent.output_schema is not None and report.structured_output is not None:
        text = json.dumps(report.structured_output, ensure_ascii=False)
    else:
        text = report.output
    if report.outcome == "max_tokens":
        text += "\n[the sub-agent's answer was cut short by its max_tokens]"
    return capped(text, DEFAULT_MAX_RESULT_BYTES)


def _summary(spec: SubagentSpec, task: str) -> str:
    first = next((line.strip() for line in task.splitlines() if line.strip()), "")
    if len(first) > _SUMMARY_CHARS:
        first = first[:_SUMMARY_CHARS] + "…"
    return f"sub-agent {spec.name} · {spec.agent.id} · {first}"


def _error(use: ToolUseBlock, text: str) -> Settled:
    return Settled(ToolResultBlock(tool_use_id=use.id, content=text, is_error=True))
