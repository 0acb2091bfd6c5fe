"""Typed keys of the contract's search attributes, shared by the workflow and the clients."""

from __future__ import annotations

from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from turnkeeper.contracts.names import (
    SA_AGENT_ID,
    SA_COST_USD,
    SA_EVAL_PROGRESS,
    SA_LLM_CALLS,
    SA_SESSION_ID,
    SA_SESSION_STATE,
    SA_STARTED_BY,
    SA_TASK_ID,
    SA_TENANT_ID,
    SA_TOOL_CALLS,
    SA_TURN_STATE,
)
from turnkeeper.contracts.turn import TurnRequest

AGENT_ID = SearchAttributeKey.for_keyword(SA_AGENT_ID)
TASK_ID = SearchAttributeKey.for_keyword(SA_TASK_ID)
TURN_STATE = SearchAttributeKey.for_keyword(SA_TURN_STATE)
COST_USD_KEY = SearchAttributeKey.for_float(SA_COST_USD)
LLM_CALLS_KEY = SearchAttributeKey.for_int(SA_LLM_CALLS)
SESSION_ID = SearchAttributeKey.for_keyword(SA_SESSION_ID)
SESSION_STATE = SearchAttributeKey.for_keyword(SA_SESSION_STATE)
TOOL_CALLS_KEY = SearchAttributeKey.for_int(SA_TOOL_CALLS)
TENANT_ID = SearchAttributeKey.for_keyword(SA_TENANT_ID)
STARTED_BY = SearchAttributeKey.for_keyword(SA_STARTED_BY)
EVAL_PROGRESS = SearchAttributeKey.for_keyword(SA_EVAL_PROGRESS)


def eval_progress(ended: int, total: int) -> str:
    """`EvalProgress`'s value: "37/400"."""
    return f"{ended}/{total}"


def identity_search_attributes(
    request: TurnRequest, started_by: str | None = None
) -> TypedSearchAttributes:
    """Set at start by our clients, so the turn is findable before its first task runs and the
    workflow need not spend a history event on setting them. `started_by` is only ever set at
    start: the workflow reads it from there (its start event), so no later upsert can change
    whom the turn belongs to."""
    pairs: list[SearchAttributePair[str]] = [
        SearchAttributePair(AGENT_ID, request.agent.id),
        SearchAttributePair(TASK_ID, request.task.id),
    ]
    if request.tenant is not None:
        pairs.append(SearchAttributePair(TENANT_ID, request.tenant))
    if started_by is not None:
        pairs.append(SearchAttributePair(STARTED_BY, started_by))
    return TypedSearchAttributes(pairs)
