"""What a remote agent's answer means for the tool call: its task's state in our words, and the
text the model reads (the artifacts of a completed task, what the agent asks of a waiting one,
why a failed one failed). Pure functions of the SDK's types."""

from __future__ import annotations

import json
from typing import cast

from a2a.types.a2a_pb2 import Message, Part, Task, TaskState
from google.protobuf.json_format import MessageToDict
from turnkeeper.contracts.a2a import A2aTaskHandle, A2aTaskState

_PREFIX = "TASK_STATE_"
_STATES = {
    "SUBMITTED",
    "WORKING",
    "INPUT_REQUIRED",
    "AUTH_REQUIRED",
    "COMPLETED",
    "FAILED",
    "CANCELED",
    "REJECTED",
}


class MalformedAnswer(ValueError):
    """The agent's answer is not a task the turn can follow; the message says what is wrong."""


def handle(agent: str, task: Task) -> A2aTaskHandle:
    """The handle of `task`.

    Raises:
        MalformedAnswer: the task has no id or no state the specification knows.
    """
    if not task.id:
        raise MalformedAnswer("its task has no id")
    name = TaskState.Name(task.status.state).removeprefix(_PREFIX)
    if name not in _STATES:
        raise MalformedAnswer(f"task {task.id!r} has no known state ({name.lower()})")
    state = cast(A2aTaskState, name.lower().replace("_", "-"))
    return A2aTaskHandle(agent=agent, task_id=task.id, context_id=task.context_id, state=state)


def settled_text(tool: str, task: Task, state: A2aTaskState) -> tuple[str, bool] | None:
    """`(text, is_error)` of a call whose task is in `state`, or None while it is still
    running (submitted, working)."""
    said = message_text(task.status.message) if task.HasField("status") else ""
    if state == "completed":
        body = "\n\n".join(filter(None, (_parts_text(a.parts) for a in task.artifacts))) or said
        return f"{body}\n\n[A2A task {task.id} completed]", False
    if state == "input-required":
        return (
            f"The A2A agent {tool!r} needs more input to go on with task {task.id!r}: "
            f"{said or '(it did not say what)'}\nTo answer, call {tool} again with "
            f'{{"message": <your answer>, "task_id": "{task.id}"}}.',
            False,
        )
    if state == "auth-required":
        return (
            f"The A2A agent {tool!r} asks for authentication that this worker cannot give "
            f"(task {task.id!r}): {said or 'no detail'}",
            True,
        )
    if state in ("failed", "rejected", "canceled"):
        verb = {"failed": "failed", "rejected": "was rejected", "canceled": "was canceled"}[state]
        return (
            f"The task {task.id!r} of A2A agent {tool!r} {verb}: {said or 'no reason given'}",
            True,
        )
    return None


def message_text(message: Message) -> str:
    """The text of a message the agent sent: its parts, one after another."""
    return _parts_text(message.parts)


def _parts_text(parts: object) -> str:
    return "\n".join(filter(None, (_part_text(part) for part in parts)))  # type: ignore[attr-defined]


def _part_text(part: Part) -> str:
    kind = part.WhichOneof("content")
    if kind == "text":
        return part.text
    if kind == "data":
        return json.dumps(MessageToDict(part.data), ensure_ascii=False)
    if kind == "url":
        return (
            f"[file {part.filename or part.url} ({part.media_type or 'unknown type'}): {part.url}]"
        )
    if kind == "raw":
        name, size = part.filename or "unnamed", len(part.raw)
        return f"[file {name} ({part.media_type or 'unknown type'}), {size} bytes, not shown]"
    return ""
