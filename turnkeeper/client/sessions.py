"""Sessions from Python: a conversation of many turns, each `send` a turn that remembers the
earlier ones.

client = await turnkeeper.connect()
session = await turnkeeper.start_session(
    client, session_id="support-42", agent={"id": "support", "model": "anthropic:claude-sonnet-4-6"}
)
turn = await session.send("My order 1042 arrived broken")
report = await turn.result()
print(await session.messages())
await session.close()
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ApplicationError

from turnkeeper.client.client import TurnHandle, turn
from turnkeeper.client.errors import InvalidSessionRequest, SessionRefused, refused
from turnkeeper.contracts.errors import SESSION_CONVERSATION_LOADING
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.names import (
    DEFAULT_TASK_QUEUE,
    QUERY_MESSAGES,
    QUERY_STATUS,
    SESSION_WORKFLOW_TYPE,
    TASK_QUEUE_ENV,
    UPDATE_CLOSE,
    UPDATE_SEND,
)
from turnkeeper.contracts.search_attributes import AGENT_ID, SESSION_ID, SESSION_STATE
from turnkeeper.contracts.session import (
    CloseInput,
    SendInput,
    SendResult,
    SessionRequest,
    SessionStatus,
)
from turnkeeper.contracts.turn import AgentSpec, Constraints
from turnkeeper.contracts.turn_ids import runtime_owned

_MESSAGES = TypeAdapter(list[Message])
# About a minute of asking (backoff to 1 s) while a continued session reads its conversation back.
_READ_BACK_ATTEMPTS = 65
# About 20 s in all: the session records a turn's end within a workflow task of it.
_SETTLE_ATTEMPTS = 25


class SessionHandle:
    """One session: its id, and what a caller can do with it."""

    def __init__(self, client: Client, workflow: WorkflowHandle[Any, SessionStatus]) -> None:
        self.client = client
        self.workflow = workflow

    @property
    def id(self) -> str:
        return self.workflow.id

    async def send(
        self, input: str, *, constraints: Constraints | Mapping[str, Any] | None = None
    ) -> TurnHandle:
        """Start the next turn with the user's message; returns once the turn has started.

        Args:
            input: The user's message.
            constraints: Of this turn only; each field given replaces the session's default
                (the cost budget is capped by what is left of the session's).

        Raises:
            SessionRefused: A turn is still running, the budget is spent, the session is
                closed, or the payload does not validate.
        """
        try:
            send = SendInput.model_validate({"input": input, "constraints": constraints})
        except ValidationError as error:
            raise SessionRefused(f"invalid send: {error}") from None
        payload = send.model_dump(mode="json", exclude_unset=True)
        if send.constraints is not None:
            payload["constraints"] = send.constraints.model_dump(mode="json", exclude_unset=True)
        result = await self._update(UPDATE_SEND, payload, SendResult)
        return turn(self.client, result.turn_workflow_id)

    async def messages(self) -> list[Message]:
        """The conversation: the exchange of every turn that answered. Right after the session
        continued as new it reads its conversation back; this waits for that (up to a minute)."""
        attempt = 0
        while True:
            try:
                return _MESSAGES.validate_python(await self.workflow.query(QUERY_MESSAGES))
            except WorkflowQueryFailedError as err:
                attempt += 1
                if not err.message.startswith(SESSION_CONVERSATION_LOADING):
                    raise
                if attempt >= _READ_BACK_ATTEMPTS:
                    raise
            await asyncio.sleep(min(0.05 * 2**attempt, 1.0))

    async def status(self) -> SessionStatus:
        """State, turns, cost so far and the running turn's id."""
        return await self.workflow.query(QUERY_STATUS, result_type=SessionStatus)

    async def close(self, reason: str = "") -> SessionStatus:
        """Ends the session (refused while a turn runs); returns its final status."""
        payload = CloseInput(reason=reason).model_dump(mode="json")
        return await self._update(UPDATE_CLOSE, payload, SessionStatus)

    async def _update(self, name: str, payload: dict[str, Any], result_type: type[Any]) -> Any:
        """Sends an update. A refusal because of a turn that has in fact ended (the session
        records its end a moment after the turn's caller sees it) is tried again, briefly."""
        for attempt in range(_SETTLE_ATTEMPTS):
            try:
                return await self.workflow.execute_update(name, payload, result_type=result_type)
            except WorkflowUpdateFailedError as error:
                running = _running_turn_of(error.cause)
                if running is None or not await self._has_ended(running):
                    raise refused(error, SessionRefused) from None
            await asyncio.sleep(min(0.05 * 2**attempt, 1.0))
        raise SessionRefused(f"session {self.id} did not record the end of its last turn")

    async def _has_ended(self, workflow_id: str) -> bool:
        description = await self.client.get_workflow_handle(workflow_id).describe()
        return description.status not in (None, WorkflowExecutionStatus.RUNNING)


def _running_turn_of(refusal: BaseException | None) -> str | None:
    """The running turn a refusal names in its details, when it names one."""
    if not isinstance(refusal, ApplicationError):
        return None
    details = refusal.details[0] if refusal.details else None
    running = details.get("running_turn_id") if isinstance(details, dict) else None
    return running if isinstance(running, str) else None


async def start_session(
    client: Client,
    *,
    session_id: str,
    agent: AgentSpec | Mapping[str, Any],
    constraints: Constraints | Mapping[str, Any] | None = None,
    task_queue: str | None = None,
) -> SessionHandle:
    """Start a session (its workflow id is `session_id`) and return its handle.

    Args:
        client: From `turnkeeper.connect()`.
        session_id: Chosen by the caller; an id, never content (no codec protects it).
        agent: The agent of every turn (the contract's `agent` object).
        constraints: Defaults of every turn; `cost_budget_usd` is the whole session's budget.
        task_queue: The workers' queue (default: `AGENT_TASK_QUEUE` or `agent-turns`).

    Raises:
        InvalidSessionRequest: The request does not validate (the message names the field),
            or `session_id` is one the runtime keeps for its own workflows.
        temporalio.exceptions.WorkflowAlreadyStartedError: A session with this id is running.
    """
    fields: dict[str, Any] = {"session_id": session_id, "agent": agent}
    if constraints is not None:
        fields["constraints"] = constraints
    try:
        request = SessionRequest.model_validate(fields)
    except ValidationError as error:
        raise InvalidSessionRequest(f"invalid session request: {error}") from None
    reserved = runtime_owned(session_id)
    if reserved is not None:
        raise InvalidSessionRequest(
            f"invalid session request: session_id: {session_id!r} is reserved: {reserved}"
        )
    workflow = await client.start_workflow(
        SESSION_WORKFLOW_TYPE,
        request.model_dump(mode="json", exclude_defaults=True),
        id=session_id,
        task_queue=task_queue or os.environ.get(TASK_QUEUE_ENV) or DEFAULT_TASK_QUEUE,
        result_type=SessionStatus,
        static_summary=f"{request.agent.id} · session {session_id}",
        search_attributes=TypedSearchAttributes(
            [
                SearchAttributePair(AGENT_ID, request.agent.id),
                SearchAttributePair(SESSION_ID, session_id),
                SearchAttributePair(SESSION_STATE, "idle"),
            ]
        ),
    )
    return SessionHandle(client, workflow)


def session(client: Client, session_id: str) -> SessionHandle:
    """The handle of a session started earlier, by id."""
    return SessionHandle(client, client.get_workflow_handle(session_id, result_type=SessionStatus))
