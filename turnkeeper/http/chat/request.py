"""The body of the AI SDK's default chat transport (`DefaultChatTransport`: `{id, messages,
trigger, messageId}`), and what its last message asks of the conversation: a user message
starts the next turn, an assistant message whose tool parts hold answered approvals decides
them. Everything earlier in `messages` is the client's copy of the conversation, which the
conversation itself holds durably: it is not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from turnkeeper.http.chat.chunks import parse_approval_id
from turnkeeper.http.errors import ApiError

# A tool part of a UI message: `tool-<name>`, or `dynamic-tool` for tools the client has no
# type of (what this endpoint's tool parts are to a client that declares none).
_TOOL_PART_PREFIX: Final = "tool-"
_DYNAMIC_TOOL_PART: Final = "dynamic-tool"
_ANSWERED: Final = "approval-responded"
_OPEN: Final = frozenset({"approval-requested", _ANSWERED})


class UiMessage(BaseModel):
    """One `UIMessage` as the client sends it."""

    # The client's own fields (its metadata type, a part's provider metadata) are its business.
    model_config = ConfigDict(extra="allow")

    id: str
    role: Literal["system", "user", "assistant"]
    parts: list[dict[str, JsonValue]]
    metadata: JsonValue = None


class ChatBody(BaseModel):
    """`POST /v1/agents/{agent_id}/chat`: what `DefaultChatTransport` sends."""

    # `useChat({body})` adds fields of the application's own: allowed, and not read.
    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1, max_length=200)
    """The chat id: the caller's conversation with the agent."""
    messages: list[UiMessage] = Field(min_length=1)
    trigger: Literal["submit-message", "regenerate-message"]
    messageId: str | None = None  # the transport's own name


@dataclass(frozen=True)
class UserText:
    """The last message is the user's: the text of the conversation's next turn."""

    text: str


@dataclass(frozen=True)
class Answer:
    """One answered approval of the last assistant message."""

    call_id: str
    offset: int
    """The offset of the call's `approval_requested` event in its turn's stream."""
    approved: bool
    reason: str


def asked(body: ChatBody) -> UserText | list[Answer]:
    """What the last message asks: a turn on the user's text, or decisions.

    Raises:
        ApiError: 422 saying why the last message asks neither.
    """
    if body.trigger == "regenerate-message":
        raise ApiError(
            422,
            "regenerate-message is not supported: the conversation keeps every answer it gave "
            "(send the question again as a new message)",
        )
    last = body.messages[-1]
    if last.role == "user":
        return UserText(_user_text(last))
    if last.role == "assistant":
        return _answers(last)
    raise ApiError(422, "the last message is a system message: send a user message")


def told_approvals(message: UiMessage) -> dict[str, str]:
    """Call id → approval id of the approvals this server asked for that `message` holds open,
    answered or not (the stream that goes on after the answers must not ask them again)."""
    told: dict[str, str] = {}
    for part in message.parts:
        approval, call_id = part.get("approval"), part.get("toolCallId")
        if not (_is_tool_part(part) and isinstance(approval, dict) and isinstance(call_id, str)):
            continue
        if part.get("state") not in _OPEN:
            continue
        sent = approval.get("id")
        parsed = parse_approval_id(sent) if isinstance(sent, str) else None
        if parsed is not None and parsed[1] == call_id and isinstance(sent, str):
            told[call_id] = sent
    return told


def _user_text(message: UiMessage) -> str:
    texts: list[str] = []
    for index, part in enumerate(message.parts):
        kind = part.get("type")
        if kind != "text":
            raise ApiError(
                422, f"messages[-1].parts[{index}]: a {kind!r} part; a turn takes text parts only"
            )
        text = part.get("text")
        if not isinstance(text, str):
            raise ApiError(422, f"messages[-1].parts[{index}].text: not a string")
        texts.append(text)
    joined = "\n".join(texts)
    if not joined.strip():
        raise ApiError(422, "the last message has no text: say what the agent should do")
    return joined


def _answers(message: UiMessage) -> list[Answer]:
    answered = [
        (index, part)
        for index, part in enumerate(message.parts)
        if _is_tool_part(part) and part.get("state") == _ANSWERED
    ]
    if not answered:
        raise ApiError(
            422,
            "the last message is the assistant's and answers no approval (no tool part in "
            f"state {_ANSWERED!r}): send a user message, or answer a tool-approval-request",
        )
    return [_answer(index, part) for index, part in answered]


def _is_tool_part(part: dict[str, JsonValue]) -> bool:
    kind = part.get("type")
    return isinstance(kind, str) and (
        kind.startswith(_TOOL_PART_PREFIX) or kind == _DYNAMIC_TOOL_PART
    )


def _answer(index: int, part: dict[str, JsonValue]) -> Answer:
    where = f"messages[-1].parts[{index}]"
    call_id, approval = part.get("toolCallId"), part.get("approval")
    if not isinstance(call_id, str) or not isinstance(approval, dict):
        raise ApiError(422, f"{where}: an answered approval needs toolCallId and approval")
    approved, reason = approval.get("approved"), approval.get("reason") or ""
    if not isinstance(approved, bool) or not isinstance(reason, str):
        raise ApiError(422, f"{where}.approval: approved must be a boolean, reason a string")
    sent = approval.get("id")
    parsed = parse_approval_id(sent) if isinstance(sent, str) else None
    if parsed is None or parsed[1] != call_id:
        raise ApiError(
            422, f"{where}.approval.id: {sent!r} is not an approval this server asked for "
            f"call {call_id!r}",
        )  # fmt: skip
    return Answer(call_id=call_id, offset=parsed[0], approved=approved, reason=reason)
