"""A served turn in A2A's words: its state as a task state, its answer as the `answer`
artifact, what it waits for as the message of an `input-required` status, and the decision an
answer to that status carries (docs/a2a.md)."""

from __future__ import annotations

from typing import Any, Final

from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
from a2a.types import (
    Artifact,
    InvalidParamsError,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from google.protobuf.timestamp_pb2 import Timestamp
from pydantic import ValidationError

from turnkeeper.contracts.signals import PendingCall
from turnkeeper.http.decisions import DecisionBody
from turnkeeper.http.mcp.results import TaskStatus as ViewStatus
from turnkeeper.http.mcp.turn_view import TurnView

# The one artifact of a task: the turn's answer, streamed as it is written.
ANSWER_ARTIFACT: Final = "answer"
# The MCP endpoint's task statuses (`turn_view`) are the same five states A2A names.
_STATE: Final[dict[ViewStatus, TaskState.ValueType]] = {
    "working": TaskState.TASK_STATE_WORKING,
    "input_required": TaskState.TASK_STATE_INPUT_REQUIRED,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}
# What an answer to `input-required` holds besides `call_id` and `approved` (DecisionBody).
DECISION_FIELDS: Final = frozenset(DecisionBody.model_fields)


def task_of(turn: TurnView, context_id: str) -> Task:
    """The task of a turn as it stands: its state, what it waits for or how it ended, and its
    answer once it has one."""
    task = Task(id=turn.workflow_id, context_id=context_id, status=status_of(turn, context_id))
    answer = answer_of(turn)
    if answer is not None:
        task.artifacts.append(answer_artifact(answer))
    return task


def status_of(turn: TurnView, context_id: str) -> TaskStatus:
    stamp = Timestamp()
    stamp.FromDatetime(turn.updated)
    waiting = turn.turn_status.pending if turn.turn_status else []
    return TaskStatus(
        state=_STATE[turn.status],
        message=agent_message(turn.workflow_id, context_id, _words(turn, waiting), waiting),
        timestamp=stamp,
    )


def answer_of(turn: TurnView) -> str | None:
    """The turn's answer: its report's output, also of a turn interrupted or failed partway
    (what it wrote is the caller's to read); None before it ends."""
    if turn.outcome is None:
        return None
    report = turn.outcome.report or (turn.outcome.failure and turn.outcome.failure.report)
    return report.output if report and report.output else None


def answer_artifact(text: str) -> Artifact:
    return Artifact(artifact_id=ANSWER_ARTIFACT, name=ANSWER_ARTIFACT, parts=[new_text_part(text)])


def answer_update(
    workflow_id: str, context_id: str, text: str, *, append: bool, last: bool = False
) -> TaskArtifactUpdateEvent:
    """A piece of the answer: `append` adds `text` to what was sent, else it replaces it."""
    return TaskArtifactUpdateEvent(
        task_id=workflow_id,
        context_id=context_id,
        artifact=answer_artifact(text),
        append=append,
        last_chunk=last,
    )


def status_update(turn: TurnView, context_id: str) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id=turn.workflow_id, context_id=context_id, status=status_of(turn, context_id)
    )


def working_update(workflow_id: str, context_id: str, words: str) -> TaskStatusUpdateEvent:
    """A step of a working turn (a tool call started or ended), said in `words`."""
    return TaskStatusUpdateEvent(
        task_id=workflow_id,
        context_id=context_id,
        status=TaskStatus(
            state=TaskState.TASK_STATE_WORKING,
            message=agent_message(workflow_id, context_id, words, []),
        ),
    )


def agent_message(
    workflow_id: str, context_id: str, words: str, waiting: list[PendingCall]
) -> Message:
    """A status message: `words`, and for each call that waits, a data part with what a
    decision on it names (`call_id`, `tool`, `input`, `kind`)."""
    parts: list[Part] = [new_text_part(words)]
    parts += [
        new_data_part(
            {"call_id": call.call_id, "tool": call.tool, "input": call.input, "kind": call.kind}
        )
        for call in waiting
    ]
    return Message(
        message_id=f"{workflow_id}:status",
        context_id=context_id,
        task_id=workflow_id,
        role=Role.ROLE_AGENT,
        parts=parts,
    )


def text_of(message: Message) -> str:
    """A new turn's task: the message's text parts.

    Raises:
        InvalidParamsError: A message without text (nothing to ask the agent).
    """
    text = "\n".join(part for part in get_text_parts(message.parts) if part.strip())
    if not text:
        raise InvalidParamsError(
            "a message that starts a turn needs a text part: what to ask the agent"
        )
    return text


def decision_of(message: Message) -> DecisionBody:
    """The decision an answer to `input-required` carries: one data part
    `{"call_id": …, "approved": true|false, "reason"?, "input"?, "remember"?}`.

    Raises:
        InvalidParamsError: No such part, more than one, or one that is no decision.
    """
    data: list[Any] = get_data_parts(message.parts)
    if len(data) != 1 or not isinstance(data[0], dict):
        raise InvalidParamsError(
            "an answer to a task that waits is one data part "
            '{"call_id": "<the waiting call>", "approved": true|false, "reason": "…"}'
        )
    try:
        return DecisionBody.model_validate(data[0])
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'decision'}: {e['msg']}" for e in err.errors()
        )
        raise InvalidParamsError(f"the decision does not fit: {problems}") from None


def _words(turn: TurnView, waiting: list[PendingCall]) -> str:
    decided = [call for call in waiting if call.kind in ("approval", "elicitation")]
    if turn.status != "input_required" or not decided:
        return turn.message
    calls = ", ".join(f"{call.tool} (call_id {call.call_id})" for call in decided)
    return (
        f"waiting for approval: {calls}. Answer with a message of this task holding one data "
        'part {"call_id": "<call_id>", "approved": true|false, "reason": "…"}'
    )
