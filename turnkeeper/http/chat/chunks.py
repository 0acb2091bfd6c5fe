"""A turn's events as the UI message chunks of the AI SDK (`ai` 5 and later): the turn is one
assistant message, each model call one step, each tool call a tool part.

Pure: the stream (`stream.py`) reads the events and the results they do not carry, and this
class says what the client is sent for each. Part ids come from the events' offsets in the turn's
stream, so a replay of the turn from its first event (a reconnect) builds the same message.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from pydantic import JsonValue

from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.signals import PendingCall

Chunk = dict[str, JsonValue]

# The data part that follows a sub-agent call's child turn (`data-subagent`, one per call,
# updated in place by its id): the AI SDK's own place for what its chunk types do not name.
SUBAGENT_PART: Final = "data-subagent"

FinishReason = Literal[
    "stop", "length", "content-filter", "tool-calls", "error", "interrupted", "other"
]

# A turn's outcome as the SDK's finish reasons say it (`AgentReport.outcome`).
_FINISH_REASONS: Final[dict[str, FinishReason]] = {
    "completed": "stop",
    "max_tokens": "length",
    "interrupted": "interrupted",
}

# `approval-<offset>-<call id>`: the offset of the `approval_requested` event travels in the id
# the client answers with, so that any server replica continues the turn's stream right after
# it without keeping anything (the call id in it is checked against the tool part's).
_APPROVAL_ID: Final = re.compile(r"approval-(\d+)-(.+)", re.DOTALL)


def approval_id(offset: int, call_id: str) -> str:
    """The `approvalId` of the call whose `approval_requested` event is at `offset`."""
    return f"approval-{offset}-{call_id}"


def parse_approval_id(value: str) -> tuple[int, str] | None:
    """The offset and call id of an `approvalId` this server sent; None for any other."""
    found = _APPROVAL_ID.fullmatch(value)
    return (int(found[1]), found[2]) if found else None


def finish_reason(outcome: str | None) -> FinishReason:
    return _FINISH_REASONS.get(outcome or "", "other")


class UiMessageChunks:
    """The chunks of one assistant message, the turn `message_id`, event by event."""

    def __init__(
        self,
        message_id: str,
        told: dict[str, str] | None = None,
        decided: set[str] | None = None,
    ) -> None:
        """`told`: call id → `approvalId` of the approvals the client holds already (a
        continuation after its answer starts past their `approval_requested` events);
        `decided`: those of them its request decided."""
        self.message_id = message_id
        self.told_approvals: dict[str, str] = dict(told or {})
        self.decided: set[str] = set(decided or ())
        self.running: set[str] = set()
        """Tool calls the client saw start and not end."""
        self.delegated: set[str] = set()
        """Sub-agent calls the client saw start and not end."""
        self._announced: set[str] = set(self.told_approvals)
        self._step_open = False
        self._text_id: str | None = None
        self._streamed = False  # text deltas reached the client in this model call

    def start(self, metadata: dict[str, JsonValue]) -> list[Chunk]:
        return [{"type": "start", "messageId": self.message_id, "messageMetadata": metadata}]

    def event(
        self,
        offset: int,
        event: TurnEvent,
        output: str | None = None,
        call_input: dict[str, JsonValue] | None = None,
    ) -> list[Chunk]:
        """What the client is sent for `event` (at `offset` in the turn's stream). What the
        events do not carry, the stream reads from the turn's transcript when it can: `output`,
        the result text of a finished tool or sub-agent call; `call_input`, a sub-agent call's
        input."""
        kind = event.kind
        if kind == "iteration_started":
            return [*self._end_step(), {"type": "start-step"}, *self._opened_step()]
        if kind == "text_delta" and event.text:
            return self._text(offset, event.text)
        if kind == "text_discarded":
            # The attempt's text is void: the step's parts so far are its text only.
            self._text_id, self._streamed = None, False
            return [{"type": "reset-step"}]
        if kind == "model_call_finished":
            return self._answered(offset, event)
        if kind == "tool_call_started":
            self.running.add(event.call_id or "")
            return [*self._end_text(), self._tool_input(event.call_id, event.tool, event.input)]
        if kind == "tool_call_finished":
            return self._tool_output(event, output)
        if kind == "subagent_finished":
            self.delegated.discard(event.call_id or "")
            return [self.subagent_part(event, "finished", output=output)]
        if kind == "approval_requested":
            return self._approval_requested(offset, event)
        if kind == "approval_decided":
            return self._approval_decided(event)
        if kind == "subagent_started":
            return self._subagent_started(event, call_input)
        if kind == "budget_status":
            return [{"type": "message-metadata", "messageMetadata": self.spend(event)}]
        return []

    def paused(self, metadata: dict[str, JsonValue]) -> list[Chunk]:
        """The turn waits for the client's answers to the approvals it was told of."""
        return [*self._end_step(), {"type": "finish", "finishReason": "tool-calls",
                                    "messageMetadata": metadata}]  # fmt: skip

    def finished(self, reason: FinishReason, metadata: dict[str, JsonValue]) -> list[Chunk]:
        return [
            *self._end_step(),
            {"type": "finish", "finishReason": reason, "messageMetadata": metadata},
        ]

    def failed(self, text: str, metadata: dict[str, JsonValue]) -> list[Chunk]:
        failure: Chunk = {"type": "error", "errorText": text}
        return [*self._end_step(), failure, *self.finished("error", metadata)]

    def waiting(self) -> set[str]:
        """The approvals the client was told of and the stream has not seen decided."""
        return set(self.told_approvals) - self.decided

    def spend(self, event: TurnEvent) -> dict[str, JsonValue]:
        """The turn's figures of a `budget_status` event, as message metadata."""
        figures = {
            "turn_id": self.message_id,
            "cost_usd": event.cost_usd,
            "cost_budget_usd": event.cost_budget_usd,
            "llm_calls": event.llm_calls,
            "tool_calls": event.tool_calls,
        }
        return {name: value for name, value in figures.items() if value is not None}

    # ---- steps and text ---------------------------------------------------------------------

    def _opened_step(self) -> list[Chunk]:
        self._step_open, self._streamed = True, False
        return []

    def _end_step(self) -> list[Chunk]:
        ended = self._end_text()
        if self._step_open:
            ended.append({"type": "finish-step"})
            self._step_open = False
        return ended

    def _end_text(self) -> list[Chunk]:
        if self._text_id is None:
            return []
        ended: list[Chunk] = [{"type": "text-end", "id": self._text_id}]
        self._text_id = None
        return ended

    def _text(self, offset: int, delta: str) -> list[Chunk]:
        chunks: list[Chunk] = []
        if self._text_id is None:
            self._text_id = f"text-{offset}"
            chunks.append({"type": "text-start", "id": self._text_id})
        self._streamed = True
        chunks.append({"type": "text-delta", "id": self._text_id, "delta": delta})
        return chunks

    def _answered(self, offset: int, event: TurnEvent) -> list[Chunk]:
        """A model call's end: its text, when it did not stream (the agent's `stream` is off)."""
        if self._streamed or not event.text:
            return self._end_text()
        return [*self._text(offset, event.text), *self._end_text()]

    # ---- tool calls ---------------------------------------------------------------------------

    def _tool_input(self, call_id: str | None, tool: str | None, given: object) -> Chunk:
        self._announced.add(call_id or "")
        return {
            "type": "tool-input-available",
            "toolCallId": call_id or "",
            "toolName": tool or "",
            "input": given if isinstance(given, dict) else {},
        }

    def sub_agent_asks(self, offset: int, waiting: list[PendingCall]) -> list[Chunk]:
        """Approvals a sub-agent's turn waits for (its calls, which its parent's status lists
        and its parent's `decide` reaches), asked of the client on a tool part each; `offset`:
        the last event of this turn sent, where the stream goes on after the answer."""
        chunks: list[Chunk] = []
        for call in waiting:
            if call.kind != "approval" or call.workflow_id is None:
                continue
            if call.call_id in self.told_approvals:
                continue
            chunks += [*self._end_text(), self._tool_input(call.call_id, call.tool, call.input)]
            approval = approval_id(offset, call.call_id)
            self.told_approvals[call.call_id] = approval
            chunks.append({"type": "tool-approval-request", "approvalId": approval,
                           "toolCallId": call.call_id})  # fmt: skip
        return chunks

    def late_output(self, call_id: str, output: str) -> Chunk:
        """A result the transcript held only after its call's end was sent."""
        return {"type": "tool-output-available", "toolCallId": call_id, "output": output}

    def _tool_output(self, event: TurnEvent, output: str | None) -> list[Chunk]:
        call_id = event.call_id or ""
        self.running.discard(call_id)
        self.delegated.discard(call_id)
        # Also of a call whose start came before this stream's first event: the client holds
        # every part up to there (a continuation starts where its last stream stopped).
        if event.is_error:
            text = output or event.message or f"{event.tool} failed"
            return [{"type": "tool-output-error", "toolCallId": call_id, "errorText": text}]
        return [{"type": "tool-output-available", "toolCallId": call_id, "output": output}]

    def _approval_requested(self, offset: int, event: TurnEvent) -> list[Chunk]:
        call_id = event.call_id or ""
        chunks = self._end_text()
        if call_id not in self._announced:
            chunks.append(self._tool_input(call_id, event.tool, event.input))
        approval = approval_id(offset, call_id)
        self.told_approvals[call_id] = approval
        chunks.append({"type": "tool-approval-request", "approvalId": approval,
                       "toolCallId": call_id})  # fmt: skip
        return chunks

    def _approval_decided(self, event: TurnEvent) -> list[Chunk]:
        call_id = event.call_id or ""
        self.decided.add(call_id)
        approval = self.told_approvals.get(call_id)
        if approval is None:
            return []  # decided before the client was told of it (a remembered approval)
        response: Chunk = {
            "type": "tool-approval-response",
            "approvalId": approval,
            "approved": bool(event.approved),
        }
        if event.reason:
            response["reason"] = event.reason
        if event.approved:
            return [response]
        return [response, {"type": "tool-output-denied", "toolCallId": call_id}]

    def _subagent_started(
        self, event: TurnEvent, call_input: dict[str, JsonValue] | None
    ) -> list[Chunk]:
        self.delegated.add(event.call_id or "")
        return [*self._end_text(), self.subagent_part(event, "running", call_input=call_input)]

    def subagent_part(
        self,
        event: TurnEvent,
        state: str,
        call_input: dict[str, JsonValue] | None = None,
        output: str | None = None,
    ) -> Chunk:
        """The `data-subagent` part of a sub-agent call: its child turn and how it stands.
        A data part, not a tool part: a tool part in progress would keep the SDK's chat from
        sending the answers to the approvals the child turn asks for (it waits for every tool
        part of the step to settle)."""
        data: dict[str, JsonValue] = {
            "call_id": event.call_id,
            "agent": event.tool,
            "workflow_id": event.workflow_id,
            "state": state,
        }
        if call_input is not None:
            data["input"] = call_input
        if output is not None:
            data["output"] = output
        if event.is_error:
            data["is_error"] = True
        if event.outcome is not None:
            data["outcome"] = event.outcome
        if event.error_type is not None:
            data["error_type"] = event.error_type
        return {"type": SUBAGENT_PART, "id": event.call_id or "", "data": data}
