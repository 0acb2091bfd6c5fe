"""Scripted replies of the fake Anthropic Messages API, and the builders tests write them with.

A reply is rendered against the request it answers, so the fake can echo the request's model,
estimate usage from the request's text and give tool calls ids that are stable across retries.
"""

from __future__ import annotations

import asyncio
import json
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from aiohttp import web

from tests.fakes.attachment_checks import attachment_tokens

JsonDict: TypeAlias = dict[str, Any]
ToolCall: TypeAlias = tuple[str, Mapping[str, Any]]

# Real error bodies carry one of these per status; `server_error` picks from it.
_ERROR_TYPE_BY_STATUS: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class ReplyContext:
    """What a reply needs to know about the request it answers."""

    body: JsonDict
    request_id: str
    message_id: str
    tool_id_prefix: str
    # Input usage the fake's prompt cache computed for this request (scripts with caching on).
    cache_usage: Mapping[str, int] | None = None


class Reply(ABC):
    """One scripted HTTP answer."""

    @abstractmethod
    async def respond(self, context: ReplyContext) -> web.Response: ...


ReplySpec: TypeAlias = Reply | Callable[[JsonDict], Reply]
Step: TypeAlias = ReplySpec | Sequence[ReplySpec]


def resolve(spec: ReplySpec, body: JsonDict) -> Reply:
    """A dynamic reply (a callable) decides from the request body; a static one is itself."""
    if isinstance(spec, Reply):
        return spec
    reply = spec(body)
    if not isinstance(reply, Reply):
        raise TypeError(f"a dynamic reply must return a Reply, got {type(reply).__name__}")
    return reply


@dataclass(frozen=True)
class MessageReply(Reply):
    """A successful Messages API answer. Tool-use blocks without an `id` get a stable one."""

    content: tuple[JsonDict, ...]
    stop_reason: str
    usage: Mapping[str, int] | None = None
    # Further headers, e.g. the API's `anthropic-ratelimit-*` of a key whose limit is spent.
    headers: tuple[tuple[str, str], ...] = ()

    async def respond(self, context: ReplyContext) -> web.Response:
        content = _with_tool_ids(self.content, context.tool_id_prefix)
        body = {
            "id": context.message_id,
            "type": "message",
            "role": "assistant",
            "model": context.body.get("model", ""),
            "content": content,
            "stop_reason": self.stop_reason,
            "stop_sequence": None,
            "usage": self._usage(context, content),
        }
        headers = {"request-id": context.request_id} | dict(self.headers)
        if context.body.get("stream"):
            return web.Response(
                text=server_sent_events(body), content_type="text/event-stream", headers=headers
            )
        return web.json_response(body, headers=headers)

    def billed_usage(self, context: ReplyContext) -> dict[str, int]:
        """The usage this answer reports, which is what a provider bills for it."""
        return self._usage(context, _with_tool_ids(self.content, context.tool_id_prefix))

    def _usage(self, context: ReplyContext, content: list[JsonDict]) -> dict[str, int]:
        request = context.body
        usage = {
            "input_tokens": estimate_tokens(request_text_chars(request)),
            "output_tokens": estimate_tokens(sum(_block_chars(block) for block in content)),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        return usage | dict(context.cache_usage or {}) | dict(self.usage or {})


@dataclass(frozen=True)
class ErrorReply(Reply):
    """An error in the API's JSON shape, with the headers the API sends."""

    status: int
    error_type: str
    message: str
    retry_after: str | None = None
    # Further headers, e.g. a gateway's relayed `llm_provider-retry-after`.
    headers: tuple[tuple[str, str], ...] = ()

    async def respond(self, context: ReplyContext) -> web.Response:
        body = {
            "type": "error",
            "error": {"type": self.error_type, "message": self.message},
            "request_id": context.request_id,
        }
        headers = {"request-id": context.request_id} | dict(self.headers)
        if self.retry_after is not None:
            headers["retry-after"] = self.retry_after
        return web.json_response(body, status=self.status, headers=headers)


@dataclass(frozen=True)
class RawReply(Reply):
    """Bytes exactly as given, for answers no well-behaved API would send."""

    status: int
    body: bytes
    content_type: str = "application/json"

    async def respond(self, context: ReplyContext) -> web.Response:
        return web.Response(
            status=self.status,
            body=self.body,
            headers={"content-type": self.content_type, "request-id": context.request_id},
        )


@dataclass(frozen=True)
class SlowReply(Reply):
    """Waits `delay_s` before giving `reply`, to provoke client timeouts."""

    reply: ReplySpec
    delay_s: float

    async def respond(self, context: ReplyContext) -> web.Response:
        await asyncio.sleep(self.delay_s)
        return await resolve(self.reply, context.body).respond(context)


def text(text: str, stop_reason: str = "end_turn", usage: Mapping[str, int] | None = None) -> Reply:
    """The model answers with `text` (and may be given any `stop_reason`)."""
    return MessageReply(
        content=({"type": "text", "text": text},), stop_reason=stop_reason, usage=usage
    )


def tool_calls(
    *calls: ToolCall, text: str | None = None, usage: Mapping[str, int] | None = None
) -> Reply:
    """The model calls tools, `(name, input)` each, optionally after some text.

    Ids are `toolu_<key>_<step>_<i>`: unique per script, step and call, and the same on a retry.
    """
    content: list[JsonDict] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "name": name, "input": dict(args)} for name, args in calls]
    return MessageReply(content=tuple(content), stop_reason="tool_use", usage=usage)


def max_tokens_reply(text: str, usage: Mapping[str, int] | None = None) -> Reply:
    """The answer was cut at `max_tokens`."""
    return MessageReply(({"type": "text", "text": text},), stop_reason="max_tokens", usage=usage)


def refusal(text: str = "") -> Reply:
    """The model declined; the API says so with `stop_reason: "refusal"`."""
    return MessageReply(_optional_text(text), stop_reason="refusal")


def context_window_exceeded(text: str = "") -> Reply:
    """The model stopped because the conversation filled its context window."""
    return MessageReply(_optional_text(text), stop_reason="model_context_window_exceeded")


def error(
    status: int,
    error_type: str,
    message: str | None = None,
    retry_after: float | str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """An API error: status, `error.type`, optionally a `retry-after` header value and others."""
    header = None if retry_after is None else _header_value(retry_after)
    message = message or f"Fake {error_type} ({status})."
    return ErrorReply(status, error_type, message, header, tuple((headers or {}).items()))


def rate_limited(retry_after: float | str | None = None) -> Reply:
    return error(429, "rate_limit_error", "Fake rate limit.", retry_after)


def overloaded() -> Reply:
    return error(529, "overloaded_error", "Overloaded")


def server_error(status: int = 500) -> Reply:
    return error(status, _ERROR_TYPE_BY_STATUS.get(status, "api_error"), "Fake server error.")


def invalid_json() -> Reply:
    """A 200 that claims JSON but is cut off mid-body, as a broken proxy might send."""
    return RawReply(200, b'{"id": "msg_truncated", "type": "mess')


@dataclass(frozen=True)
class CutStreamReply(Reply):
    """A streamed answer whose connection breaks after the first events, as a dropped link or a
    crashed proxy would cut it: the body ends without its final chunk."""

    text: str

    async def respond(self, context: ReplyContext) -> web.Response:
        body = MessageReply(({"type": "text", "text": self.text},), "end_turn")
        events = server_sent_events(_message_envelope(context, body))
        half = events[: len(events) // 2].encode()

        async def cut_short() -> AsyncIterator[bytes]:
            yield half
            raise ConnectionResetError("the fake cut the stream")

        return web.Response(body=cut_short(), content_type="text/event-stream")


def _message_envelope(context: ReplyContext, reply: MessageReply) -> JsonDict:
    return {
        "id": context.message_id,
        "type": "message",
        "role": "assistant",
        "model": context.body.get("model", ""),
        "content": list(reply.content),
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": reply.billed_usage(context),
    }


def stream_cut(text: str = "an answer the stream never finished") -> Reply:
    """A streamed 200 cut off mid-SSE (ask the turn for `agent.stream: true`)."""
    return CutStreamReply(text)


def broken_body() -> Reply:
    """A 200 of valid JSON that is not a Messages API response."""
    return RawReply(200, b'{"type": "message", "content": 42, "usage": "none"}')


def slow(reply: ReplySpec, delay_s: float) -> Reply:
    return SlowReply(reply, delay_s)


def estimate_tokens(chars: int) -> int:
    return max(1, chars // 4)


def request_text_chars(body: JsonDict) -> int:
    """Characters of the system prompt and of every message's content (tool inputs as JSON)."""
    system = body.get("system")
    chars = _content_chars(system) if system else 0
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            chars += _content_chars(message.get("content"))
    return chars


def sanitise_key(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", key)


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(_block_chars(block) for block in content if isinstance(block, dict))
    return 0


def _block_chars(block: JsonDict) -> int:
    kind = block.get("type")
    if kind == "text":
        return len(str(block.get("text", "")))
    if kind == "tool_use":
        return len(json.dumps(block.get("input", {})))
    if kind == "tool_result":
        return _content_chars(block.get("content"))
    # Four characters a token, as `estimate_tokens` counts: an image bills its own tokens.
    return 4 * attachment_tokens(block)


def _with_tool_ids(content: Sequence[JsonDict], prefix: str) -> list[JsonDict]:
    blocks: list[JsonDict] = []
    index = 0
    for block in content:
        if block.get("type") == "tool_use" and "id" not in block:
            block = {"type": "tool_use", "id": f"{prefix}_{index}"} | block
            index += 1
        blocks.append(dict(block))
    return blocks


def _optional_text(text: str) -> tuple[JsonDict, ...]:
    return ({"type": "text", "text": text},) if text else ()


def _header_value(retry_after: float | str) -> str:
    if isinstance(retry_after, float) and retry_after.is_integer():
        return str(int(retry_after))
    return str(retry_after)


_CHUNK = 7  # characters per streamed delta: small, so a test sees several


def server_sent_events(message: JsonDict) -> str:
    """The Messages API's streaming form of `message`: message_start, then per content block a
    start, its deltas and a stop, then message_delta (stop reason, usage) and message_stop."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[tuple[str, JsonDict]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(message["content"]):
        events += _block_events(index, block)
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    # Written by hand, not with aiohttp-sse: the whole stream is one response body built in
    # advance (and cut short on purpose elsewhere), and SSE framing is this one line.
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def _block_events(index: int, block: JsonDict) -> list[tuple[str, JsonDict]]:
    if block["type"] == "text":
        opening: JsonDict = {"type": "text", "text": ""}
        text = block["text"]
        deltas = [
            {"type": "text_delta", "text": text[i : i + _CHUNK]}
            for i in range(0, len(text), _CHUNK)
        ]
    else:
        opening = {**block, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
    events = [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opening},
        )
    ]
    events += [
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
        for d in deltas
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events
