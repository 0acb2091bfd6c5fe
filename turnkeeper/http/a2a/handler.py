"""The A2A operations of one served agent, over the turns in Temporal: `SendMessage` and
`SendStreamingMessage` start a conversation's next turn or answer the approval it waits for,
`GetTask`, `SubscribeToTask` and `CancelTask` read, follow and interrupt a turn. A task is a
turn (its id the turn's workflow id), a context a conversation; nothing of either is kept in
this process, so any replica of the server answers for any task.

Who calls is the identity of the bearer token (`endpoint`); what it may see, start and decide
is the HTTP API's own rule (`access`, `decisions`), and a turn it may not see is "task not
found", as a missing one is.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from typing import Final, Protocol

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    ExtendedAgentCardNotConfiguredError,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    InternalError,
    InvalidParamsError,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    PushNotificationNotSupportedError,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskNotCancelableError,
    TaskNotFoundError,
    TaskPushNotificationConfig,
    UnsupportedOperationError,
)
from a2a.utils.errors import A2AError

from turnkeeper.contracts.turn_ids import NESTED_ID_SEPARATOR
from turnkeeper.http import audit
from turnkeeper.http.a2a.follow import Follower
from turnkeeper.http.a2a.wire import decision_of, task_of, text_of
from turnkeeper.http.access import visible_turn
from turnkeeper.http.conversations import conversation_workflow_id
from turnkeeper.http.decisions import decide, intervene
from turnkeeper.http.errors import ApiError
from turnkeeper.http.mcp.agents import ServedAgent
from turnkeeper.http.mcp.turn_view import TurnView, outcome, view
from turnkeeper.http.tokens import Identity
from turnkeeper.http.turns import UPDATE_INTERRUPT, TurnService

# Where the endpoint puts the signed-in identity in the call context's state.
IDENTITY_STATE: Final = "turnkeeper_identity"
# The audit line's actions of what a caller changes over A2A (a new turn is the
# conversation's own, `conversation:send`).
AUDIT_DECIDE: Final = "a2a:decide"
AUDIT_INTERRUPT: Final = "a2a:interrupt"
CANCEL_REASON: Final = "cancelled by the A2A caller (tasks/cancel)"


class Conversations(Protocol):
    """What the handler needs of `turnkeeper.http.conversations.Conversations`."""

    async def send(
        self, identity: Identity, agent_id: str, conversation_id: str, text: str
    ) -> str: ...


class ConversationsOf(Conversations, Protocol):
    """`Conversations` with the agents it serves."""

    agents: dict[str, ServedAgent]


class TurnRequestHandler(RequestHandler):
    """The A2A operations of `agent` (one handler per served agent)."""

    def __init__(
        self, agent: ServedAgent, turns: TurnService, conversations: Conversations
    ) -> None:
        self.agent = agent
        self.turns = turns
        self.conversations = conversations
        self.follower = Follower(turns)

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        workflow_id, context_id, after_call = await self._act(params.message, context)
        if params.configuration.return_immediately:
            return task_of(await self._view(workflow_id), context_id)
        return await self.follower.settled(workflow_id, context_id, after_call)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        workflow_id, context_id, after_call = await self._act(params.message, context)
        async for event in self.follower.stream(workflow_id, context_id, after_call):
            yield event

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        identity = _identity(context)
        context_id = await self._visible(identity, params.id)
        return task_of(await self._view(params.id), context_id)

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        context_id = await self._visible(_identity(context), params.id)
        async for event in self.follower.stream(params.id, context_id, None, fresh=False):
            yield event

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        """An interrupt as the caller: the turn stops at its next safe point and ends with what
        it has written (`canceled`)."""
        identity = _identity(context)
        context_id = await self._visible(identity, params.id)
        payload = {"reason": CANCEL_REASON, "author": identity.name}
        try:
            await intervene(self.turns, params.id, UPDATE_INTERRUPT, payload, identity)
        except ApiError as error:
            audit.line(identity, AUDIT_INTERRUPT, params.id, error.status)
            if error.status == 409:
                raise TaskNotCancelableError(f"task {params.id!r}: {error.message}") from None
            raise _a2a_error(error, params.id) from None
        audit.line(identity, AUDIT_INTERRUPT, params.id, 200)
        await outcome(self.turns, params.id)
        return task_of(await self._view(params.id), context_id)

    async def _act(
        self, message: Message, context: ServerCallContext
    ) -> tuple[str, str, str | None]:
        """What `message` asks: an answer to the task it names (a decision), else the next turn
        of its context (a new one when it names none). The turn, its context, and the call the
        answer decided (None: a new turn).

        Raises:
            A2AError: A message that fits neither, or what the API refused (nothing started or
                decided then).
        """
        identity = _identity(context)
        if message.task_id:
            context_id = await self._visible(identity, message.task_id)
            if message.context_id and message.context_id != context_id:
                raise InvalidParamsError(
                    f"task {message.task_id!r} belongs to another context than "
                    f"{message.context_id!r}"
                )
            body = decision_of(message)
            try:
                await decide(self.turns, message.task_id, body, identity)
            except ApiError as error:
                audit.line(identity, AUDIT_DECIDE, message.task_id, error.status)
                raise _a2a_error(error, message.task_id, decision=True) from None
            audit.line(identity, AUDIT_DECIDE, message.task_id, 200)
            return message.task_id, context_id, body.call_id
        text = text_of(message)
        # A context the client did not name is a new conversation, named here.
        context_id = message.context_id or str(uuid.uuid4())
        try:
            workflow_id = await self.conversations.send(identity, self.agent.name, context_id, text)
        except ApiError as error:
            raise _a2a_error(error, context_id) from None
        return workflow_id, context_id, None

    async def _visible(self, identity: Identity, workflow_id: str) -> str:
        """The context of turn `workflow_id` of this agent, when `identity` may see it.

        Raises:
            TaskNotFoundError: Alike for no such turn, another agent's, and one `identity` may
                not see.
        """
        try:
            turn = await visible_turn(self.turns, workflow_id, identity)
        except ApiError as error:
            raise _a2a_error(error, workflow_id) from None
        context_id = conversation_of(self.agent.name, workflow_id)
        if turn.request.agent.id != self.agent.name or context_id is None:
            raise TaskNotFoundError(f"no task {workflow_id!r}")
        return context_id

    async def _view(self, workflow_id: str) -> TurnView:
        try:
            return await view(self.turns, workflow_id)
        except ApiError as error:
            raise _a2a_error(error, workflow_id) from None

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        raise UnsupportedOperationError("tasks are not listed; GET /v1/turns lists turns")

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError


def conversation_of(agent_id: str, workflow_id: str) -> str | None:
    """The conversation (A2A context) whose turn `workflow_id` is, when it is a turn of a
    conversation of `agent_id` (`<session>/turn-<n>`, the session `conversation_workflow_id`
    names); None for any other turn, which is no task of this agent's."""
    session, separator, turn = workflow_id.rpartition(NESTED_ID_SEPARATOR)
    prefix = conversation_workflow_id(agent_id, "-").removesuffix("-")
    if not separator or not turn.startswith("turn-") or not session.startswith(prefix):
        return None
    return session.removeprefix(prefix) or None


def _identity(context: ServerCallContext) -> Identity:
    identity = context.state.get(IDENTITY_STATE)
    if not isinstance(identity, Identity):
        # Unreachable behind the endpoint, which signs every request in first.
        raise InternalError("the request reached the agent without an identity")
    return identity


def _a2a_error(error: ApiError, subject: str, *, decision: bool = False) -> A2AError:
    """An API refusal about task or context `subject` as an A2A error: a missing one (or one
    the caller may not see) is "task not found", a fault of the server or of Temporal an
    internal error, any other refusal invalid params with the API's reason and status."""
    if error.status == 404 and not decision:
        return TaskNotFoundError(f"no task {subject!r}")
    if error.status >= 500:
        return InternalError(error.message)
    return InvalidParamsError(error.message, data={"status": error.status})
