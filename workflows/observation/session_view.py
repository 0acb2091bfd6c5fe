"""What the world sees of a session without asking it: search attributes (ids, state and cost
only, since no codec protects them) and the Web UI's current details."""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import SearchAttributePair, TypedSearchAttributes

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.search_attributes import (
        AGENT_ID,
        COST_USD_KEY,
        SESSION_ID,
        SESSION_STATE,
        STARTED_BY,
        TASK_ID,
        TENANT_ID,
    )
    from turnkeeper.contracts.turn import TurnRequest
    from turnkeeper.workflows.sessions.state import Session

SESSION_TURNS_STARTED_BY_PATCH = "session-turns-started-by"


def publish(session: Session) -> None:
    """Upserts the search attributes that changed (each upsert is a history event, and a client
    that started the session may have set them already) and refreshes the current details."""
    wanted = {
        AGENT_ID: session.request.agent.id,
        SESSION_ID: session.request.session_id,
        SESSION_STATE: session.state,
        COST_USD_KEY: round(session.cost_usd, 10),
    }
    current = workflow.info().typed_search_attributes
    changed = [
        SearchAttributePair(key, value)
        for key, value in wanted.items()
        if current.get(key) != value
    ]
    if changed:
        workflow.upsert_search_attributes(changed)
    workflow.set_current_details(details_markdown(session))


def turn_search_attributes(request: TurnRequest, session: Session) -> TypedSearchAttributes:
    """A turn's identity, set when the session starts it; `SessionId` finds every turn of the
    conversation."""
    pairs: list[SearchAttributePair[str]] = [
        SearchAttributePair(AGENT_ID, request.agent.id),
        SearchAttributePair(TASK_ID, request.task.id),
        SearchAttributePair(SESSION_ID, session.request.session_id),
    ]
    if request.tenant is not None:
        pairs.append(SearchAttributePair(TENANT_ID, request.tenant))
    # A session's turns belong to whoever started the session: the API shows and lets them
    # decide its turns as it would their own (asked only of a session that has an owner).
    owner = workflow.info().typed_search_attributes.get(STARTED_BY)
    if owner is not None and workflow.patched(SESSION_TURNS_STARTED_BY_PATCH):
        pairs.append(SearchAttributePair(STARTED_BY, owner))
    return TypedSearchAttributes(pairs)


def details_markdown(session: Session) -> str:
    cost = f"${session.cost_usd:.4f}"
    budget = session.request.constraints.cost_budget_usd
    if budget is not None:
        cost += f" of ${budget:g}"
        if session.cost_extended_usd:
            cost += f" (+${session.cost_extended_usd:g} extended)"
    lines = [
        f"**{session.request.agent.id}** · session `{session.request.session_id}` · "
        f"**{session.state}**",
        "",
        f"{session.turns} turns · cost {cost}",
    ]
    if session.running_turn_id is not None:
        lines += ["", f"Running: `{session.running_turn_id}` ({session.running_turn_state})"]
    if session.budget_request is not None:
        # The exact command is in the turn's own current details; the id is enough here.
        lines += [
            "",
            f"The turn waits for more {session.budget_request.budget.replace('_', ' ')}: "
            f"`turnkeeper extend {session.running_turn_id} …`",
        ]
    return "\n".join(lines)
