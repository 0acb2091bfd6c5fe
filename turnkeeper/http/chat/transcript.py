"""What a turn's events leave out and a chat client shows: a tool call's result and a sub-agent
call's input, read from the turn's `transcript` query, once per call that the copy read last
does not hold (the calls of one response share one read)."""

from __future__ import annotations

from pydantic import JsonValue
from temporalio.client import WorkflowQueryFailedError, WorkflowQueryRejectedError
from temporalio.service import RPCError

from turnkeeper.client.client import turn
from turnkeeper.contracts.messages import Message, ToolResultBlock, ToolUseBlock
from turnkeeper.http.turns import TurnService


class Transcript:
    """The turn `workflow_id`'s transcript, read when a call is not in the copy at hand."""

    def __init__(self, turns: TurnService, workflow_id: str) -> None:
        self._turns = turns
        self._workflow_id = workflow_id
        self._messages: list[Message] = []

    async def result(self, call_id: str) -> str | None:
        """The text of the call's result; None while the turn has not recorded it (a response's
        results join the conversation once all its calls are settled) or cannot say."""
        block = self._result(call_id) or (await self._read() and self._result(call_id))
        return block.text() if block else None

    async def call_input(self, call_id: str) -> dict[str, JsonValue] | None:
        """The call's input as the model sent it; None when the turn cannot say."""
        use = self._use(call_id) or (await self._read() and self._use(call_id))
        return use.input if use else None

    async def _read(self) -> bool:
        try:
            self._messages = await turn(self._turns.client, self._workflow_id).transcript()
        except (RPCError, WorkflowQueryFailedError, WorkflowQueryRejectedError):
            return False  # ended and gone, or no worker to answer: the event's own fields do
        return True

    def _result(self, call_id: str) -> ToolResultBlock | None:
        for message in reversed(self._messages):
            for block in message.content:
                if isinstance(block, ToolResultBlock) and block.tool_use_id == call_id:
                    return block
        return None

    def _use(self, call_id: str) -> ToolUseBlock | None:
        for message in reversed(self._messages):
            for block in message.content:
                if isinstance(block, ToolUseBlock) and block.id == call_id:
                    return block
        return None
