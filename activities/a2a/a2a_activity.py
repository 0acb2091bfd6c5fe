"""The A2A activities: the cards of the agents a turn names (`a2a_describe_agents`), a message
sent to one with its task returned at once (`a2a_send_message`), one poll of that task
(`a2a_get_task`), its cancellation (`a2a_cancel_task`).

Each is one short request, so a remote task of an hour holds no activity slot for that hour. The
activities answer rather than fail when the agent misbehaves (unreachable at send, a card that
is not a card, an answer that is not a task, a task it no longer knows): the model reads an
`is_error` result and the turn goes on. Only a poll that cannot reach the agent fails, so that
Temporal polls again with backoff (polling twice is harmless); a send is never repeated by the
activity itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
)
from temporalio import activity
from turnkeeper.activities.a2a import answers
from turnkeeper.activities.a2a.config import A2aConfig, unknown_agent
from turnkeeper.activities.a2a.failures import describe_failure, is_unreachable
from turnkeeper.activities.a2a.remote import RemoteAgents
from turnkeeper.activities.heartbeating import heartbeating
from turnkeeper.activities.tools.results import stored_result
from turnkeeper.activities.turn_identity import bound_to_turn
from turnkeeper.contracts.a2a import (
    ACTIVITY_A2A_CANCEL_TASK,
    ACTIVITY_A2A_DESCRIBE_AGENTS,
    ACTIVITY_A2A_GET_TASK,
    ACTIVITY_A2A_SEND_MESSAGE,
    A2aAgentInfo,
    A2aCancelResult,
    A2aDescribeInput,
    A2aDescribeResult,
    A2aPollResult,
    A2aSendInput,
    A2aSendResult,
    A2aTaskInput,
)
from turnkeeper.contracts.activity_io import ToolCallResult
from turnkeeper.contracts.result_limits import DEFAULT_MAX_RESULT_BYTES, capped

from turnkeeper.ground.logs import get_logger
from turnkeeper.payloads.content_store import ContentStore

log = get_logger(__name__)


def _card_description(card: AgentCard) -> str:
    """What the model reads of an agent whose agent file entry gives no description."""
    said = ": ".join(filter(None, (card.name, card.description)))
    skills = "; ".join(f"{s.name} ({s.description})" for s in card.skills if s.name)
    return f"{said} Skills: {skills}." if skills else said


class A2aActivities:
    """The worker's remote A2A agents as activities; register `activities()` with the worker.

    Args:
        config: the agents, from `load_a2a_config` (may be empty: every agent is then unknown).
        store: where each `tool_result` block is put.
        max_result_bytes: the cap on a result's UTF-8 size, as for worker tools.
    """

    def __init__(
        self,
        config: A2aConfig,
        store: ContentStore,
        *,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    ) -> None:
        self.remote = RemoteAgents(config)
        self._store = store
        self._max_result_bytes = max_result_bytes

    def activities(self) -> list[Callable[..., Any]]:
        return [
            self.a2a_describe_agents,
            self.a2a_send_message,
            self.a2a_get_task,
            self.a2a_cancel_task,
        ]

    async def aclose(self) -> None:
        await self.remote.aclose()

    @activity.defn(name=ACTIVITY_A2A_DESCRIBE_AGENTS)
    async def a2a_describe_agents(self, request: A2aDescribeInput) -> A2aDescribeResult:
        """The named agents as tools, from their cards; an agent that fails is in `errors`."""
        result = A2aDescribeResult()
        for ref in request.agents:
            config = self.remote.config(ref.name)
            if config is None:
                result.errors.append(unknown_agent(ref.name, self.remote.agents))
                continue
            try:
                card = await heartbeating(self.remote.card(ref.name))
            except Exception as err:
                result.errors.append(describe_failure(ref.name, "its card could not be read", err))
                continue
            described = ref.description or _card_description(card)
            result.agents.append(
                A2aAgentInfo(
                    name=ref.name,
                    description=described or f"The remote A2A agent {ref.name}",
                    timeout_s=config.timeout_s,
                    activity_timeout_s=config.activity_timeout_s(),
                )
            )
        log.info(
            "a2a_describe_agents",
            turn_id=request.turn_id,
            offered=len(result.agents),
            errors=len(result.errors),
        )
        return result

    @activity.defn(name=ACTIVITY_A2A_SEND_MESSAGE)
    async def a2a_send_message(self, send: A2aSendInput) -> A2aSendResult:
        """Sends the model's message and returns the task the agent answers with at once."""
        send = bound_to_turn(send)
        started = time.monotonic()
        if self.remote.config(send.agent) is None:
            text = unknown_agent(send.agent, self.remote.agents)
            return A2aSendResult(
                result=await self._stored(
                    send.turn_id, send.call_id, send.agent, text, True, started
                )
            )
        try:
            answer = await heartbeating(self._send(send))
        except Exception as err:
            self.remote.forget(send.agent)
            text = describe_failure(send.agent, "the message could not be sent", err)
            log.warning(
                "a2a_send_failed", agent=send.agent, call_id=send.call_id, error=type(err).__name__
            )
            return A2aSendResult(
                result=await self._stored(
                    send.turn_id, send.call_id, send.agent, text, True, started
                )
            )
        if isinstance(answer, Message):
            text = answers.message_text(answer) or "(the agent answered with an empty message)"
            return A2aSendResult(
                result=await self._stored(
                    send.turn_id, send.call_id, send.agent, text, False, started
                )
            )
        return await self._task_answer(send.turn_id, send.call_id, send.agent, answer, started)

    @activity.defn(name=ACTIVITY_A2A_GET_TASK)
    async def a2a_get_task(self, poll: A2aTaskInput) -> A2aPollResult:
        """One `tasks/get` of the task; the stored result once the call is settled."""
        started = time.monotonic()
        handle = poll.task
        try:
            client = await heartbeating(self.remote.client(handle.agent))
            task = await heartbeating(client.get_task(GetTaskRequest(id=handle.task_id)))
        except Exception as err:
            if is_unreachable(err):
                raise  # Temporal polls again with backoff; a poll changes nothing remotely
            text = describe_failure(poll.tool, f"task {handle.task_id!r} could not be polled", err)
            text += "; the task is no longer followed"
            return A2aPollResult(
                task=handle,
                result=await self._stored(
                    poll.turn_id, poll.call_id, poll.tool, text, True, started
                ),
            )
        answer = await self._task_answer(poll.turn_id, poll.call_id, poll.tool, task, started)
        return A2aPollResult(task=answer.task or handle, result=answer.result)

    @activity.defn(name=ACTIVITY_A2A_CANCEL_TASK)
    async def a2a_cancel_task(self, cancel: A2aTaskInput) -> A2aCancelResult:
        """Asks the agent to cancel the task; never fails."""
        try:
            client = await self.remote.client(cancel.task.agent)
            await client.cancel_task(CancelTaskRequest(id=cancel.task.task_id))
        except Exception as err:
            return A2aCancelResult(cancelled=False, detail=f"{type(err).__name__}: {err}")
        log.info(
            "a2a_task_cancelled",
            agent=cancel.task.agent,
            task_id=cancel.task.task_id,
            turn_id=cancel.turn_id,
        )
        return A2aCancelResult(cancelled=True)

    async def _send(self, send: A2aSendInput) -> Message | Task:
        client = await self.remote.client(send.agent)
        message = Message(
            message_id=send.message_id,
            role=Role.ROLE_USER,
            parts=[Part(text=send.message)],
            task_id=send.task_id or "",
            context_id=send.context_id or "",
        )
        request = SendMessageRequest(message=message)
        request.configuration.return_immediately = True
        async for event in client.send_message(request):
            if event.HasField("message"):
                return event.message
            if event.HasField("task"):
                return event.task
        raise answers.MalformedAnswer("it answered with neither a task nor a message")

    async def _task_answer(
        self, turn_id: str, call_id: str, tool: str, task: Task, started: float
    ) -> A2aSendResult:
        try:
            handle = answers.handle(tool, task)
        except answers.MalformedAnswer as err:
            text = f"A2A agent {tool!r} answered wrongly: {err}"
            return A2aSendResult(
                result=await self._stored(turn_id, call_id, tool, text, True, started)
            )
        settled = answers.settled_text(tool, task, handle.state)
        if settled is None:
            return A2aSendResult(task=handle)
        stored = await self._stored(turn_id, call_id, tool, *settled, started)
        return A2aSendResult(task=handle, result=stored)

    async def _stored(
        self, turn_id: str, call_id: str, tool: str, text: str, is_error: bool, started: float
    ) -> ToolCallResult:
        return await stored_result(
            self._store,
            turn_id=turn_id,
            call_id=call_id,
            tool=tool,
            text=capped(text, self._max_result_bytes),
            is_error=is_error,
            started=started,
            a2a_agent=tool,
        )
