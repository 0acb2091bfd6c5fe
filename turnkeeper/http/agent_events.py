"""`POST /v1/agents/{agent_id}/events` on `turnkeeper serve --agents`: an event for a served
agent's turn of a key (docs/waiting.md). The turn at `event:<agent id>:<key>` receives it, and is
started on it (as the caller's, billed as `POST /v1/turns` bills) when none runs: a webhook's
retries deliver once and never start two turns. A key's turn is its owner's: to anyone who may
not see it, it answers as no turn does."""

from __future__ import annotations

import json
from typing import Annotated, Final

from fastapi import Depends, FastAPI, Request
from pydantic import BaseModel, ConfigDict, Field, JsonValue
from temporalio.service import RPCError

from turnkeeper.client.agent_events import described, signal_event
from turnkeeper.client.errors import InvalidTurnRequest
from turnkeeper.contracts.search_attributes import STARTED_BY
from turnkeeper.contracts.waits import (
    EVENT_KEY_PATTERN,
    EVENT_NAME_PATTERN,
    IDEMPOTENCY_ID_MAX,
    event_workflow_id,
)
from turnkeeper.http import audit
from turnkeeper.http.access import billed_request, may_see
from turnkeeper.http.conversations import Conversations
from turnkeeper.http.errors import ApiError, no_turn
from turnkeeper.http.tokens import Identity

AUDIT_EVENT: Final = "event:deliver"


class EventBody(BaseModel):
    """The body of `POST /v1/agents/{agent_id}/events`."""

    model_config = ConfigDict(extra="forbid")
    key: str = Field(pattern=EVENT_KEY_PATTERN)
    """Which turn of the agent: the one for this key."""
    event: str = Field(pattern=EVENT_NAME_PATTERN)
    """The event's name, as the agent's `wait {"event": …}` names it."""
    idempotency_id: str = Field(min_length=1, max_length=IDEMPOTENCY_ID_MAX)
    """The sender's id of this delivery: a retry with it is delivered once."""
    payload: JsonValue = None
    """What a waiting agent reads as its `wait` call's result."""
    task: str | None = Field(default=None, min_length=1)
    """The task of a turn this event starts; by default one naming the event and its payload."""


class EventAnswer(BaseModel):
    turn_id: str
    """The turn of the key."""
    started: bool
    """Whether this event started it."""
    duplicate: bool = False
    """The event had started that turn already, which has ended: nothing was sent."""


def _caller(request: Request) -> Identity:
    identity: Identity = request.state.identity  # set by the app's sign-in middleware
    return identity


Caller = Annotated[Identity, Depends(_caller)]


def add_events(app: FastAPI, conversations: Conversations) -> None:
    """Adds the served agents' event endpoint to `app`."""

    @app.post("/v1/agents/{agent_id}/events", status_code=202)
    async def deliver(agent_id: str, body: EventBody, identity: Caller) -> EventAnswer:
        """Delivers the event to the turn of its key, starting that turn when none runs."""
        agent = conversations.agent(agent_id)  # 404 naming the served agents
        workflow_id = event_workflow_id(agent.name, body.key)
        _, request = agent.turn(body.task or _task_of(body))
        billed = billed_request(request, identity)  # 403 as the API refuses a turn
        try:
            before = await described(conversations.client, workflow_id)
            if before is not None:
                owner = before.typed_search_attributes.get(STARTED_BY)
                if not may_see(identity, request.agent.approver_names(), owner):
                    raise no_turn(workflow_id)
            delivery = await signal_event(
                conversations.client,
                billed,
                key=body.key,
                event=body.event,
                idempotency_id=body.idempotency_id,
                payload=body.payload,
                task_queue=conversations.task_queue,
                started_by=identity.name,
            )
        except InvalidTurnRequest as refused:
            raise ApiError(422, str(refused)) from None
        except RPCError as err:
            raise ApiError(502, f"Temporal refused the event: {err.message}") from None
        audit.line(identity, AUDIT_EVENT, workflow_id, 202)
        return EventAnswer(
            turn_id=delivery.workflow_id, started=delivery.started, duplicate=delivery.duplicate
        )


def _task_of(body: EventBody) -> str:
    payload = json.dumps(body.payload, ensure_ascii=False, indent=2)
    return f"The event {body.event!r} arrived for {body.key!r}, with this payload:\n{payload}"
