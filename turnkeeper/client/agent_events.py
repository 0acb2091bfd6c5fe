"""Turns started by events: `signal_event` delivers one event to the turn of its key, starting
that turn when none runs (Temporal's signal-with-start), so that a webhook's retries never start
two turns: the turn drops a second delivery of an idempotency id, and a retry of the event that
started a turn which has ended since is recognised by the id the turn keeps in its memo."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue, ValidationError
from temporalio.client import Client, WorkflowExecutionDescription, WorkflowExecutionStatus
from temporalio.common import Priority
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.client.errors import InvalidTurnRequest
from turnkeeper.client.turns import request_payload
from turnkeeper.contracts.names import DEFAULT_TASK_QUEUE, TASK_QUEUE_ENV, WORKFLOW_TYPE
from turnkeeper.contracts.search_attributes import identity_search_attributes
from turnkeeper.contracts.turn import AgentReport, TurnRequest
from turnkeeper.contracts.turn_ids import TURN_ID_MAX_CHARS
from turnkeeper.contracts.waits import (
    MEMO_STARTING_EVENT,
    SIGNAL_EVENT,
    AgentEvent,
    event_workflow_id,
)


@dataclass(frozen=True)
class EventDelivery:
    """What `signal_event` did with an event."""

    workflow_id: str
    """The turn of the event's key."""
    started: bool
    """Whether the event started that turn (else it went to the turn already running)."""
    duplicate: bool = False
    """The event started the turn earlier, which has ended: nothing was sent again."""


async def signal_event(
    client: Client,
    request: TurnRequest | Mapping[str, Any],
    /,
    *,
    key: str,
    event: str,
    idempotency_id: str,
    payload: JsonValue = None,
    task_queue: str | None = None,
    started_by: str | None = None,
) -> EventDelivery:
    """Delivers the event `event` to the turn of `key` (`event:<agent id>:<key>`), starting it
    on `request` when no turn of that key runs. An agent waiting with `wait {"event": …}` for
    this name wakes with `payload` as the tool's result; the turn an event starts reads it in
    its task (`request.task.input`, which the caller writes).

    Args:
        client: From `turnkeeper.connect()`.
        request: The turn to start if none runs for `key`.
        key: Which turn: letters, digits and `. _ - : @`, at most 128 characters.
        event: The event's name, as `wait {"event": …}` names it.
        idempotency_id: The sender's id of this delivery; a second delivery of it is dropped.
        payload: JSON the waiting agent reads.
        task_queue: The workers' queue (default: `AGENT_TASK_QUEUE` or `agent-turns`).
        started_by: The identity that owns a turn this starts (the HTTP API passes its
            caller's), as for `start_turn`.

    Raises:
        InvalidTurnRequest: The request or the event does not validate, or the request sets
            `parent` (the message names the field).
    """
    try:
        turn = request if isinstance(request, TurnRequest) else TurnRequest.model_validate(request)
        delivered = AgentEvent(key=key, event=event, idempotency_id=idempotency_id, payload=payload)
    except ValidationError as error:
        raise InvalidTurnRequest(f"invalid event: {error}") from None
    if turn.parent is not None:
        raise InvalidTurnRequest("invalid event: parent: is set by the runtime; leave it out")
    workflow_id = event_workflow_id(turn.agent.id, key)
    if len(workflow_id) > TURN_ID_MAX_CHARS:
        raise InvalidTurnRequest(
            f"invalid event: key: the turn id {workflow_id[:60]!r}… would be longer than "
            f"{TURN_ID_MAX_CHARS} characters"
        )
    before = await described(client, workflow_id)
    if before is not None and await _started_by_this(before, idempotency_id):
        return EventDelivery(workflow_id, started=False, duplicate=True)
    handle = await client.start_workflow(
        WORKFLOW_TYPE,
        request_payload(turn),
        id=workflow_id,
        task_queue=task_queue or os.environ.get(TASK_QUEUE_ENV) or DEFAULT_TASK_QUEUE,
        result_type=AgentReport,
        static_summary=turn.summary(),
        search_attributes=identity_search_attributes(turn, started_by),
        priority=Priority(fairness_key=turn.tenant) if turn.tenant else Priority.default,
        memo={MEMO_STARTING_EVENT: idempotency_id},
        start_signal=SIGNAL_EVENT,
        start_signal_args=[delivered.model_dump(mode="json")],
    )
    running_before = before is not None and before.status == WorkflowExecutionStatus.RUNNING
    started = not running_before or handle.result_run_id != before.run_id
    return EventDelivery(workflow_id, started=started)


async def described(client: Client, workflow_id: str) -> WorkflowExecutionDescription | None:
    """The latest run at `workflow_id`, or None when there is none."""
    try:
        return await client.get_workflow_handle(workflow_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise


async def _started_by_this(before: WorkflowExecutionDescription, idempotency_id: str) -> bool:
    """Whether `before`, a run that has ended, was started by the event `idempotency_id`."""
    if before.status == WorkflowExecutionStatus.RUNNING:
        return False  # the turn itself drops a second delivery
    memo = await before.memo()
    return memo.get(MEMO_STARTING_EVENT) == idempotency_id
