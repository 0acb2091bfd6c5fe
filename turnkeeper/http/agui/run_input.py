"""What a `RunAgentInput` asks of a turn: a new user message (the next turn of the thread's
conversation), or the answers to the interrupts of the run before (`resume`).

The input is AG-UI's own model (`ag_ui.core.RunAgentInput`), so a body that is not one is
refused by FastAPI with 422 naming the field. What the protocol allows but a turn cannot take
is refused here, also with 422 naming the field, before anything is started or decided:

- without `resume`, the last message must be the user's, with text (the client sends the
  whole conversation each time; the turn's history is the runtime's, so only the new message
  counts);
- with `resume`, each entry answers one interrupt once, and its `payload` fits the answer the
  interrupt asked for (`APPROVAL_SCHEMA`, or an MCP server's own schema).

`tools`, `context`, `state` and `forwardedProps` are read and not used: an agent's tools and
instructions are its agent file's, never a caller's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ag_ui.core import ResumeEntry, RunAgentInput, TextPart, UserMessage
from pydantic import BaseModel, ConfigDict, Field, JsonValue, StrictBool, StrictStr, ValidationError

from turnkeeper.http.errors import ApiError

# The answer an approval interrupt asks for: AG-UI's recommended shape for a tool-bound
# interrupt (docs/concepts/interrupts.mdx, "Approve with edits"), and a reason.
APPROVAL_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "description": "true runs the call; false rejects it."},
        "reason": {
            "type": "string",
            "description": "Why (optional); a rejection's reason reaches the model.",
        },
        "editedArgs": {
            "type": "object",
            "description": "The call's input to run instead (a full replacement, not merged).",
        },
    },
    "required": ["approved"],
    "additionalProperties": False,
}


class ApprovalAnswer(BaseModel):
    """A `resolved` resume entry's payload for an approval interrupt."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # Strict: "yes" or 1 is not a person's yes.
    approved: StrictBool
    reason: StrictStr = ""
    edited_args: dict[str, JsonValue] | None = Field(default=None, alias="editedArgs")


@dataclass(frozen=True)
class NewMessage:
    """A run that sends the thread's next user message."""

    text: str


@dataclass(frozen=True)
class Resume:
    """A run that answers the interrupts of the run before, and goes on with its turn."""

    entries: list[ResumeEntry]


def requested(run: RunAgentInput) -> NewMessage | Resume:
    """What `run` asks for.

    Raises:
        ApiError: 422 naming the field that a turn cannot take.
    """
    if run.resume:
        ids = [entry.interrupt_id for entry in run.resume]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ApiError(422, f"resume: interrupt(s) answered twice: {', '.join(twice)}")
        return Resume(list(run.resume))
    if not run.messages:
        raise ApiError(422, "messages: empty; the last message must be the user's new message")
    last = run.messages[-1]
    where = f"messages[{len(run.messages) - 1}]"
    if not isinstance(last, UserMessage):
        raise ApiError(
            422,
            f"{where}: the last message must be the user's new message (role user), "
            f"not {last.role!r}; answers to interrupts go in resume",
        )
    return NewMessage(_text(last, where))


def _text(message: UserMessage, where: str) -> str:
    if isinstance(message.content, str):
        text = message.content
    else:
        others = sorted({part.type for part in message.content if not isinstance(part, TextPart)})
        if others:
            raise ApiError(
                422, f"{where}.content: only text parts are taken, not {', '.join(others)}"
            )
        text = "\n".join(part.text for part in message.content if isinstance(part, TextPart))
    if not text.strip():
        raise ApiError(422, f"{where}.content: empty; say what the agent should do")
    return text


def approval_answer(entry: ResumeEntry, where: str) -> ApprovalAnswer:
    """The decision a `resolved` entry gives an approval interrupt.

    Raises:
        ApiError: 422 naming the payload's fault.
    """
    try:
        return ApprovalAnswer.model_validate(entry.payload)
    except ValidationError as err:
        faults = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'payload'}: {e['msg']}" for e in err.errors()
        )
        raise ApiError(
            422,
            f"{where}.payload: {faults} (an approval answer is {{approved, reason?, editedArgs?}})",
        ) from None


def elicitation_answer(entry: ResumeEntry, where: str) -> dict[str, JsonValue]:
    """The answer a `resolved` entry gives an MCP server's question (checked against its
    schema by the turn, as the API's decisions are).

    Raises:
        ApiError: 422 for a payload that is not an object.
    """
    if not isinstance(entry.payload, dict):
        raise ApiError(422, f"{where}.payload: the answer to this question is an object")
    return dict(entry.payload)
