"""What the outside world sees of a running turn: search attributes for visibility queries, the
current details the Web UI shows (markdown), and the live event stream.

All three are derived from workflow state, deterministically. Search-attribute upserts are the
only part that writes history, so they are made only when a value changed, and counters are
refreshed at a measured pace (`_counters_due`).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributePair

with workflow.unsafe.imports_passed_through():
    from temporalio.contrib.workflow_streams import WorkflowStream
    from turnkeeper.contracts.events import TURN_EVENTS_TOPIC, EventKind, TurnEvent
    from turnkeeper.contracts.names import SA_COST_USD, SA_LLM_CALLS, SA_TOOL_CALLS, SA_TURN_STATE
    from turnkeeper.contracts.policies import PolicyDecision
    from turnkeeper.contracts.search_attributes import (
        AGENT_ID,
        COST_USD_KEY,
        LLM_CALLS_KEY,
        TASK_ID,
        TENANT_ID,
        TOOL_CALLS_KEY,
        TURN_STATE,
    )
    from turnkeeper.contracts.signals import PendingCall, TurnState
    from turnkeeper.contracts.waits import WaitingFor, wait_line
    from turnkeeper.workflows.budgets import checks as budgets
    from turnkeeper.workflows.observation.stream_retention import RetainedEvents
    from turnkeeper.workflows.turn_state import Turn

_INPUT_PREVIEW_CHARS = 300
_ENDED = ("completed", "interrupted", "failed", "cancelled")
COUNTER_REFRESH = timedelta(seconds=10)


class TurnView:
    def __init__(self, stream: WorkflowStream) -> None:
        self.stream = stream
        self._events = RetainedEvents(stream, stream.topic(TURN_EVENTS_TOPIC, type=TurnEvent))
        self._published: dict[str, Any] = {}
        self._upserted_at = datetime.min.replace(tzinfo=UTC)
        self._identity: list[SearchAttributePair[Any]] = []

    def identify(self, turn: Turn) -> None:
        """Agent and task ids go with the next upsert (the turn's first), unless the client
        set them at start."""
        request = turn.request
        known = workflow.info().typed_search_attributes
        tenant = request.tenant
        if (
            known.get(AGENT_ID) == request.agent.id
            and known.get(TASK_ID) == request.task.id
            and known.get(TENANT_ID) == tenant
        ):
            return
        self._identity = [AGENT_ID.value_set(request.agent.id), TASK_ID.value_set(request.task.id)]
        # With the same first upsert, so a tenant's turn spends no history event more on it.
        if tenant is not None:
            self._identity.append(TENANT_ID.value_set(tenant))

    def publish(
        self,
        turn: Turn,
        state: TurnState,
        pending: list[PendingCall],
        waits: list[WaitingFor] | None = None,
    ) -> None:
        """Brings search attributes and current details up to date with the turn."""
        values: dict[str, Any] = {
            SA_TURN_STATE: state,
            SA_COST_USD: round(turn.spend.cost_usd, 6),
            SA_LLM_CALLS: turn.spend.model_calls,
            SA_TOOL_CALLS: turn.spend.tool_calls,
        }
        changed = {k: v for k, v in values.items() if self._published.get(k) != v}
        if SA_TURN_STATE in changed or (changed and state in _ENDED) or self._counters_due(changed):
            workflow.upsert_search_attributes([*self._identity, *_pairs(changed)])
            self._identity = []
            self._published.update(changed)
            self._upserted_at = workflow.now()
        # Free (no history event), so always current: the Web UI's view of the turn.
        workflow.set_current_details(details_markdown(turn, state, pending, waits or []))

    def _counters_due(self, changed: dict[str, Any]) -> bool:
        """Whether changed counters alone are worth an upsert. Each upsert is a history event, a
        visibility write and, on Temporal Cloud, a billed action, so counters are refreshed
        with every change of state and at most every `COUNTER_REFRESH` in between; the details
        and the `status` query are always current."""
        if not changed.keys() & {SA_COST_USD, SA_LLM_CALLS}:
            return False  # ToolCalls alone waits for the next upsert
        return workflow.now() - self._upserted_at >= COUNTER_REFRESH

    def event(self, kind: EventKind, turn: Turn, **fields: Any) -> None:
        self._events.publish(
            TurnEvent(
                kind=kind,
                at=workflow.now(),
                iteration=turn.iteration,
                max_iterations=budgets.iteration_limit(turn),
                **fields,
            )
        )

    def budget_event(self, turn: Turn) -> None:
        constraints = turn.request.task.constraints
        self.event(
            "budget_status",
            turn,
            cost_usd=round(turn.spend.cost_usd, 10),
            cost_budget_usd=constraints.cost_budget_usd,
            elapsed_ms=turn.active_ms(workflow.now()),
            time_budget_ms=constraints.time_budget_ms,
            llm_calls=turn.spend.model_calls,
            tool_calls=turn.spend.tool_calls,
        )


_KEYS: dict[str, Any] = {
    SA_TURN_STATE: TURN_STATE,
    SA_COST_USD: COST_USD_KEY,
    SA_LLM_CALLS: LLM_CALLS_KEY,
    SA_TOOL_CALLS: TOOL_CALLS_KEY,
}


def _pairs(values: dict[str, Any]) -> list[SearchAttributePair[Any]]:
    return [_KEYS[name].value_set(value) for name, value in values.items()]


def details_markdown(
    turn: Turn, state: TurnState, pending: list[PendingCall], waits: list[WaitingFor] | None = None
) -> str:
    """The Web UI's "current details" of the turn: where it is, what it cost, who it waits for."""
    request = turn.request
    agent = request.agent
    limits = budgets.limits(turn)  # extensions included
    cost = f"${turn.spend.cost_usd:.4f}"
    if limits.cost_budget_usd is not None:
        cost += f" of ${limits.cost_budget_usd:g}"
    lines = [
        f"**{agent.id}** · task `{request.task.id}` · **{state.replace('_', ' ')}**",
        "",
        f"Iteration {turn.iteration} of {limits.max_iterations} · cost {cost} · "
        f"{turn.spend.model_calls} model calls · {turn.spend.tool_calls} tool calls",
    ]
    if turn.tools.skills_loaded:
        lines.append(
            "skills loaded: " + ", ".join(f"`{name}`" for name in turn.tools.skills_loaded)
        )
    if turn.started_by is not None:
        lines.append(f"started by `{turn.started_by}`")
    if turn.policies.policy_decisions:
        lines.append(_last_policy_line(turn.policies.policy_decisions[-1]))
    workflow_id = workflow.info().workflow_id
    for call in pending:
        lines += ["", *_pending_lines(workflow_id, call)]
    if turn.budget.budget_request is not None:
        lines += ["", *_budget_lines(workflow_id, turn)]
    lines += [line for wait in waits or [] for line in ("", wait_line(wait))]
    return "\n".join(lines)


# An example amount per budget for the command shown, in the units the payload takes.
_EXAMPLE_EXTENSION = {
    "cost": ("--cost-usd", "cost_usd", "1"),
    "time": ("--time-ms", "time_ms", "60000"),
    "iterations": ("--iterations", "iterations", "5"),
    "tool_interactions": ("--tool-interactions", "tool_interactions", "5"),
}


def _budget_lines(workflow_id: str, turn: Turn) -> list[str]:
    request = turn.budget.budget_request
    assert request is not None
    flag, field, amount = _EXAMPLE_EXTENSION[request.budget]
    ours = f"turnkeeper extend {workflow_id} {flag} {amount}"
    temporal = (
        f"temporal workflow update execute --workflow-id {workflow_id} --name extend_budget "
        f"--input '{{\"{field}\": {amount}}}'"
    )
    return [
        f"**Waiting for a budget extension** (request {request.number}): {request.message}",
        f"extend: `{ours}`  or  `{temporal}`",
    ]


def _pending_lines(workflow_id: str, call: PendingCall) -> list[str]:
    preview = json.dumps(call.input, ensure_ascii=False)
    if len(preview) > _INPUT_PREVIEW_CHARS:
        preview = preview[:_INPUT_PREVIEW_CHARS] + "…"
    if call.kind == "approval":
        signal = json.dumps({"call_id": call.call_id, "approved": True})
        ours = f"turnkeeper approve {workflow_id} {call.call_id}"
        name, heading = "approve", "Waiting for approval"
    else:
        signal = json.dumps({"call_id": call.call_id, "output": "…"})
        ours = f"turnkeeper submit {workflow_id} {call.call_id} --output '…'"
        name, heading = "submit_tool_result", "Waiting for the caller's result"
    temporal = (
        f"temporal workflow signal --workflow-id {workflow_id} --name {name} --input '{signal}'"
    )
    return [
        f"**{heading}:** `{call.tool}` (call `{call.call_id}`)",
        f"input: `{preview}`",
        f"decide: `{ours}`  or  `{temporal}`",
    ]


def _last_policy_line(decision: PolicyDecision) -> str:
    applied = "enforced" if decision.enforced else "log only"
    by = ", ".join(f"`{name}`" for name in decision.policies) or "no permitting policy"
    return f"last policy decision: `{decision.tool}` **{decision.effect}** ({applied}) by {by}"
