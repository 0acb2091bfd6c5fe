"""The A2A activities of a worker with no remote agent configured.

The `a2a-sdk` (with protobuf) costs a worker about 70 MiB and seconds of start-up on import, so a
worker without `TURNKEEPER_A2A_CONFIG` registers these instead: the same activity names, every
agent unknown (a turn that names one goes on without its tool; a task a turn follows after
moving to this worker ends as an error result), nothing of the SDK loaded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from temporalio import activity
from turnkeeper.activities.a2a.config import unknown_agent
from turnkeeper.activities.tools.results import stored_result
from turnkeeper.contracts.a2a import (
    ACTIVITY_A2A_CANCEL_TASK,
    ACTIVITY_A2A_DESCRIBE_AGENTS,
    ACTIVITY_A2A_GET_TASK,
    ACTIVITY_A2A_SEND_MESSAGE,
    A2aCancelResult,
    A2aDescribeInput,
    A2aDescribeResult,
    A2aPollResult,
    A2aSendInput,
    A2aSendResult,
    A2aTaskInput,
)
from turnkeeper.contracts.activity_io import ToolCallResult

from turnkeeper.payloads.content_store import ContentStore


class NoA2aAgents:
    def __init__(self, store: ContentStore) -> None:
        self._store = store

    def activities(self) -> list[Callable[..., Any]]:
        return [
            self.a2a_describe_agents,
            self.a2a_send_message,
            self.a2a_get_task,
            self.a2a_cancel_task,
        ]

    async def aclose(self) -> None:
        pass  # nothing was connected

    @activity.defn(name=ACTIVITY_A2A_DESCRIBE_AGENTS)
    async def a2a_describe_agents(self, request: A2aDescribeInput) -> A2aDescribeResult:
        return A2aDescribeResult(errors=[unknown_agent(ref.name, {}) for ref in request.agents])

    @activity.defn(name=ACTIVITY_A2A_SEND_MESSAGE)
    async def a2a_send_message(self, send: A2aSendInput) -> A2aSendResult:
        return A2aSendResult(result=await self._unknown(send.turn_id, send.call_id, send.agent))

    @activity.defn(name=ACTIVITY_A2A_GET_TASK)
    async def a2a_get_task(self, poll: A2aTaskInput) -> A2aPollResult:
        result = await self._unknown(poll.turn_id, poll.call_id, poll.tool)
        return A2aPollResult(task=poll.task, result=result)

    @activity.defn(name=ACTIVITY_A2A_CANCEL_TASK)
    async def a2a_cancel_task(self, cancel: A2aTaskInput) -> A2aCancelResult:
        return A2aCancelResult(cancelled=False, detail=unknown_agent(cancel.task.agent, {}))

    async def _unknown(self, turn_id: str, call_id: str, agent: str) -> ToolCallResult:
        return await stored_result(
            self._store,
            turn_id=turn_id,
            call_id=call_id,
            tool=agent,
            text=unknown_agent(agent, {}),
            is_error=True,
            started=time.monotonic(),
        )
