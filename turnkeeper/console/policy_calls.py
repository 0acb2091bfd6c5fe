"""The tool calls of finished turns, read back from their histories for `turnkeeper policy
test`: each as the Cedar request it was (or would have been) and what the turn did with it.

Everything comes through the client's data converter, so encrypted histories (with
`TURNKEEPER_ENCRYPTION_KEYS`) and claim-checked content read as the worker wrote them. The turn's
report holds the calls (its transcript), the approvals and the recorded policy decisions; the
history adds the time each model call answered, the time its calls were checked at.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHistory
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.contracts.names import ACTIVITY_MODEL_CALL
from turnkeeper.contracts.policies import PolicyEffect
from turnkeeper.contracts.policy_io import PolicyCaller, PolicyCheckInput
from turnkeeper.contracts.turn import AgentReport, TurnRequest


@dataclass(frozen=True)
class PastCall:
    """One tool call of a finished turn."""

    call_id: str
    request: PolicyCheckInput
    happened: PolicyEffect
    """What the turn did: ran it (`permit`), asked a person first (`ask`), or a policy forbade
    it (`forbid`)."""
    asked_anyway: bool = False
    """It waited for approval without a policy asking (`require_approval`): it would again."""


@dataclass
class PastTurn:
    """A turn's calls, or why it could not be read."""

    workflow_id: str
    calls: list[PastCall] = field(default_factory=list)
    problem: str | None = None


async def past_turns(
    client: Client, workflow_ids: Sequence[str], query: str | None, limit: int | None
) -> AsyncIterator[PastTurn]:
    """The turns of `workflow_ids`, or those `query` lists (at most `limit`)."""
    if query is not None:
        async for history in client.list_workflows(query, limit=limit).map_histories():
            yield await _read(client, history)
        return
    for workflow_id in workflow_ids:
        try:
            history = await client.get_workflow_handle(workflow_id).fetch_history()
        except RPCError as err:
            found = err.status != RPCStatusCode.NOT_FOUND
            yield PastTurn(workflow_id, problem=err.message if found else "no such workflow")
            continue
        yield await _read(client, history)


async def _read(client: Client, history: WorkflowHistory) -> PastTurn:
    events = list(history.events)
    if not events or not events[0].HasField("workflow_execution_started_event_attributes"):
        return PastTurn(history.workflow_id, problem="no history")
    started = events[0].workflow_execution_started_event_attributes
    if started.workflow_type.name != "AgentTurnWorkflow":
        return PastTurn(history.workflow_id, problem=f"not a turn ({started.workflow_type.name})")
    report = await _report(client, events[-1])
    if report is None:
        return PastTurn(history.workflow_id, problem="not finished (or ended without a report)")
    [request] = await client.data_converter.decode(list(started.input.payloads)[:1])
    turn = TurnRequest.model_validate(request)
    answered = _model_call_times(events) or [events[0].event_time.ToDatetime(tzinfo=UTC)]
    return PastTurn(history.workflow_id, calls=_calls(turn, report, answered))


async def _report(client: Client, last: HistoryEvent) -> AgentReport | None:
    """The report of a completed turn, or the partial report of a failed one."""
    payloads: list[Any] = []
    if last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
        payloads = list(last.workflow_execution_completed_event_attributes.result.payloads)
    elif last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
        failure = last.workflow_execution_failed_event_attributes.failure
        payloads = list(failure.application_failure_info.details.payloads)
    if not payloads:
        return None
    [value] = await client.data_converter.decode(payloads[:1])
    return AgentReport.model_validate(value)


def _model_call_times(events: list[HistoryEvent]) -> list[datetime]:
    """When each model call answered, in order: the nth is the time of iteration n's calls."""
    scheduled = {
        event.event_id
        for event in events
        if event.HasField("activity_task_scheduled_event_attributes")
        and event.activity_task_scheduled_event_attributes.activity_type.name == ACTIVITY_MODEL_CALL
    }
    return [
        event.event_time.ToDatetime(tzinfo=UTC)
        for event in events
        if event.HasField("activity_task_completed_event_attributes")
        and event.activity_task_completed_event_attributes.scheduled_event_id in scheduled
    ]


def _calls(turn: TurnRequest, report: AgentReport, answered: list[datetime]) -> list[PastCall]:
    decided = {d.call_id: d for d in reversed(report.policy_decisions) if d.enforced}
    approved = {d.call_id for d in report.decisions}
    calls, iteration = [], 0
    for message in report.messages:
        if message.role != "assistant":
            continue
        iteration += 1
        cost = sum(c.cost_usd or 0.0 for c in report.priced_calls if c.iteration <= iteration)
        at = answered[min(iteration, len(answered)) - 1]
        for use in message.tool_uses():
            ruled = decided.get(use.id)
            happened: PolicyEffect = ruled.effect if ruled else "permit"
            asked = use.id in approved and (ruled is None or ruled.effect != "ask")
            if asked and happened == "permit":
                happened = "ask"
            caller = PolicyCaller(
                agent_id=turn.agent.id,
                tenant=report.tenant or "",
                started_by=report.started_by or "",
                approvers=turn.agent.approver_names() or [],
                cost_usd=round(cost, 6),
                iteration=iteration,
                depth=turn.parent.depth if turn.parent is not None else 0,
            )
            request = PolicyCheckInput(caller=caller, tool=use.name, input=use.input, time=at)
            calls.append(PastCall(use.id, request, happened, asked_anyway=asked))
    return calls
