"""Conversations with the served agents, for the chat protocols of `turnkeeper serve --agents`
(the AI SDK's chat, AG-UI's threads, A2A's contexts).

A conversation is one `AgentSessionWorkflow` at `conversation:<agent id>:<conversation id>`:
the caller names the conversation, the runtime the workflow, so that one agent's conversation
never answers for another's. It belongs to the identity that started it (its `StartedBy`, which
its turns carry too), and to nobody else: someone else's conversation is refused with the words
of a missing one. Everything is read from Temporal on each request, so any replica of the server
answers any request of a conversation.
"""

from __future__ import annotations

import os
from typing import Final

from temporalio.client import Client, WorkflowExecutionDescription, WorkflowExecutionStatus
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.client.errors import SessionRefused
from turnkeeper.client.sessions import SessionHandle
from turnkeeper.contracts.names import (
    DEFAULT_TASK_QUEUE,
    QUERY_STATUS,
    SESSION_WORKFLOW_TYPE,
    TASK_QUEUE_ENV,
)
from turnkeeper.contracts.search_attributes import AGENT_ID, SESSION_ID, SESSION_STATE, STARTED_BY
from turnkeeper.contracts.session import SESSION_ID_PATTERN, SessionRequest, SessionStatus
from turnkeeper.contracts.turn_ids import CONVERSATION_ID_PREFIX
from turnkeeper.http import audit
from turnkeeper.http.access import billed_request
from turnkeeper.http.errors import ApiError
from turnkeeper.http.mcp.agents import ServedAgent
from turnkeeper.http.tokens import Identity

# The audit line's action of a message that started a conversation's turn.
AUDIT_SEND: Final = "conversation:send"
# What a caller may name a conversation: what a session id may hold after the runtime's prefix.
CONVERSATION_ID_CHARS: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-"
)
_SESSION_ID_MAX: Final = int(SESSION_ID_PATTERN.rsplit(",", 1)[1].split("}")[0]) + 1


def conversation_workflow_id(agent_id: str, conversation_id: str) -> str:
    """The session of `agent_id`'s conversation `conversation_id`.

    Raises:
        ApiError: 422 for an id that cannot name one (empty, other characters, too long).
    """
    workflow_id = f"{CONVERSATION_ID_PREFIX}{agent_id}:{conversation_id}"
    if not conversation_id or not set(conversation_id) <= CONVERSATION_ID_CHARS:
        raise ApiError(
            422,
            f"conversation id {conversation_id[:80]!r}: letters, digits and '. _ : -' only, "
            "at least one",
        )
    if len(workflow_id) > _SESSION_ID_MAX:
        most = _SESSION_ID_MAX - len(workflow_id) + len(conversation_id)
        raise ApiError(422, f"conversation id: at most {most} characters for agent {agent_id!r}")
    return workflow_id


class Conversations:
    """The served agents' conversations, each checked against its owner on every request."""

    def __init__(
        self, client: Client, agents: dict[str, ServedAgent], task_queue: str | None = None
    ) -> None:
        self.client = client
        self.agents = agents
        # The workers' queue, as `POST /v1/turns` chooses it.
        self.task_queue = task_queue or os.environ.get(TASK_QUEUE_ENV) or DEFAULT_TASK_QUEUE

    def agent(self, agent_id: str) -> ServedAgent:
        """The served agent `agent_id`.

        Raises:
            ApiError: 404 naming the agents there are.
        """
        agent = self.agents.get(agent_id)
        if agent is None:
            known = ", ".join(sorted(self.agents)) or "none"
            raise ApiError(404, f"no agent {agent_id!r} (served: {known})")
        return agent

    async def send(self, identity: Identity, agent_id: str, conversation_id: str, text: str) -> str:
        """Starts the conversation's next turn on `text` (and the conversation, when new, owned
        by `identity`, billed as `POST /v1/turns` would bill its turn, its model calls
        streamed whatever the agent file says); its workflow id.

        Raises:
            ApiError: 404 for an unknown agent or someone else's conversation; 409 while a turn
                of it runs, or when it has ended; 403 or 422 as the API refuses a turn.
        """
        agent = self.agent(agent_id)
        workflow_id = conversation_workflow_id(agent_id, conversation_id)
        if not text.strip():
            raise ApiError(422, "the message is empty: say something to the agent")
        described = await self._described(workflow_id)
        if described is None:
            described = await self._start(identity, agent, workflow_id)
        self._check_owner(identity, workflow_id, described)
        if described.status != WorkflowExecutionStatus.RUNNING:
            raise ApiError(409, f"conversation {conversation_id!r} has ended: start another")
        session = SessionHandle(self.client, self.client.get_workflow_handle(workflow_id))
        try:
            turn = await session.send(text)
        except SessionRefused as refused:
            audit.line(identity, AUDIT_SEND, workflow_id, 409)
            raise ApiError(409, f"conversation {conversation_id!r}: {refused}") from None
        audit.line(identity, AUDIT_SEND, turn.id, 201)
        return turn.id

    async def running_turn(
        self, identity: Identity, agent_id: str, conversation_id: str
    ) -> str | None:
        """The turn of the conversation in flight, or None when none runs.

        Raises:
            ApiError: 404 for an unknown agent, a missing conversation, someone else's.
        """
        return (await self._status(identity, agent_id, conversation_id)).running_turn_id

    async def last_turn(
        self, identity: Identity, agent_id: str, conversation_id: str
    ) -> str | None:
        """The turn in flight, else the last that ended, else None (no turn yet).

        Raises:
            ApiError: 404 as `running_turn`.
        """
        status = await self._status(identity, agent_id, conversation_id)
        if status.running_turn_id is not None:
            return status.running_turn_id
        return status.recent_turns[-1].turn_workflow_id if status.recent_turns else None

    async def _status(
        self, identity: Identity, agent_id: str, conversation_id: str
    ) -> SessionStatus:
        self.agent(agent_id)
        workflow_id = conversation_workflow_id(agent_id, conversation_id)
        described = await self._described(workflow_id)
        if described is None:
            raise _no_conversation(workflow_id)
        self._check_owner(identity, workflow_id, described)
        handle = self.client.get_workflow_handle(workflow_id)
        try:
            return await handle.query(QUERY_STATUS, result_type=SessionStatus)
        except RPCError as err:
            raise ApiError(502, f"Temporal refused the query: {err.message}") from None

    async def _described(self, workflow_id: str) -> WorkflowExecutionDescription | None:
        try:
            return await self.client.get_workflow_handle(workflow_id).describe()
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return None
            raise ApiError(502, f"Temporal refused to describe it: {err.message}") from None

    async def _start(
        self, identity: Identity, agent: ServedAgent, workflow_id: str
    ) -> WorkflowExecutionDescription:
        _, probe = agent.turn("probe")
        billed = billed_request(probe, identity)  # 403 as the API refuses the turn
        request = SessionRequest(
            # Every chat protocol shows the answer as it is written: model calls stream.
            agent=billed.agent.model_copy(update={"stream": True}),
            session_id=workflow_id,
            constraints=billed.task.constraints,
            tenant=billed.tenant,
        )
        try:
            await self.client.start_workflow(
                SESSION_WORKFLOW_TYPE,
                request.model_dump(mode="json", exclude_defaults=True),
                id=workflow_id,
                task_queue=self.task_queue,
                static_summary=f"{agent.name} · conversation of {identity.name}",
                search_attributes=TypedSearchAttributes(
                    [
                        SearchAttributePair(AGENT_ID, agent.name),
                        SearchAttributePair(SESSION_ID, workflow_id),
                        SearchAttributePair(SESSION_STATE, "idle"),
                        SearchAttributePair(STARTED_BY, identity.name),
                    ]
                ),
            )
        except WorkflowAlreadyStartedError:
            pass  # another request started it first: its owner is checked as any other's
        except RPCError as err:
            raise ApiError(502, f"Temporal refused to start it: {err.message}") from None
        described = await self._described(workflow_id)
        if described is None:  # started and gone at once: nothing a caller could do
            raise ApiError(502, f"conversation {workflow_id!r} vanished as it started")
        return described

    @staticmethod
    def _check_owner(
        identity: Identity, workflow_id: str, described: WorkflowExecutionDescription
    ) -> None:
        owner = described.typed_search_attributes.get(STARTED_BY)
        if described.workflow_type != SESSION_WORKFLOW_TYPE or owner != identity.name:
            raise _no_conversation(workflow_id)


def _no_conversation(workflow_id: str) -> ApiError:
    """The answer for a missing conversation and for someone else's, alike."""
    return ApiError(404, f"no conversation {workflow_id!r} of yours")
