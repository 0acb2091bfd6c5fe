"""Scripted replies of the fake Chat Completions API, and the builders tests write them with.

Like the Anthropic fake's replies they are rendered against the request they answer: the model
is echoed, usage is estimated from the request's text, tool calls get ids that are stable
across retries, and a request with `"stream": true` gets server-sent chunks as the API sends
them (`stream_options.include_usage` adds the final usage chunk).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.anthropic_replies import (
    JsonDict,
    RawReply,
    Reply,
    ReplyContext,
    ReplySpec,
    SlowReply,
    ToolCall,
    estimate_tokens,
)
from tests.fakes.attachment_checks import openai_attachment_usage

__all__ = [
    "ChatErrorReply",
    "ChatReply",
    "RawReply",
    "ReplySpec",
    "SlowReply",
    "chat_error",
    "chunks",
    "content_filtered",
    "context_length_exceeded",
    "malformed_arguments",
    "rate_limited",
    "server_error",
    "text",
    "tool_calls",
]

_CHUNK = 7  # characters per streamed delta: small, so a test sees several


@dataclass(frozen=True)
class ChatReply(Reply):
    """A successful chat completion. Tool calls without an `id` get a stable one."""

    content: str | None
    calls: tuple[JsonDict, ...] = ()
    finish_reason: str = "stop"
    cached_tokens: int = 0
    refusal: str | None = None
    # As a gateway in front of Claude reports them: cache writes in the usage details, and what
    # it billed in `usage.cost` (its stream's last chunk too) and in `x-litellm-response-cost`.
    cache_write_tokens: int = 0
    cost: float | None = None

    async def respond(self, context: ReplyContext) -> web.Response:
        calls = [
            {"id": call.get("id") or f"{_call_prefix(context)}_{i}", "type": "function"}
            | {"function": call["function"]}
            for i, call in enumerate(self.calls)
        ]
        message: JsonDict = {"role": "assistant", "content": self.content, "refusal": self.refusal}
        if calls:
            message["tool_calls"] = calls
        body = {
            "id": f"chatcmpl-{context.message_id}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": context.body.get("model", ""),
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
            "usage": self._usage(context.body, message),
        }
        headers = {"x-request-id": context.request_id}
        if self.cost is not None:
            headers["x-litellm-response-cost"] = repr(self.cost)
        if context.body.get("stream"):
            return web.Response(
                text=chunks(body, context.body), content_type="text/event-stream", headers=headers
            )
        return web.json_response(body, headers=headers)

    def _usage(self, request: JsonDict, message: JsonDict) -> JsonDict:
        messages = request.get("messages", [])
        # Images and files bill their own tokens, not their base64's characters.
        data_chars, attachment_tokens = openai_attachment_usage(messages)
        prompt = estimate_tokens(len(json.dumps(messages)) - data_chars) + attachment_tokens
        completion = estimate_tokens(len(json.dumps(message)))
        cached = min(self.cached_tokens, prompt)
        details: JsonDict = {"cached_tokens": cached}
        if self.cache_write_tokens:
            details["cache_write_tokens"] = min(self.cache_write_tokens, prompt - cached)
        usage: JsonDict = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": details,
        }
        return usage | ({"cost": self.cost} if self.cost is not None else {})


@dataclass(frozen=True)
class ChatErrorReply(Reply):
    """An error in OpenAI's JSON shape (`error.message`, `type`, `param`, `code`)."""

    status: int
    error_type: str
    code: str | None
    message: str
    retry_after: str | None = None
    # Further headers, e.g. a gateway's relayed `llm_provider-retry-after`.
    headers: tuple[tuple[str, str], ...] = ()

    async def respond(self, context: ReplyContext) -> web.Response:
        body = {
            "error": {
                "message": self.message,
                "type": self.error_type,
                "param": None,
                "code": self.code,
            }
        }
        headers = {"x-request-id": context.request_id} | dict(self.headers)
        if self.retry_after is not None:
            headers["retry-after"] = self.retry_after
        return web.json_response(body, status=self.status, headers=headers)


def text(
    content: str,
    finish_reason: str = "stop",
    cached_tokens: int = 0,
    *,
    cache_write_tokens: int = 0,
    cost: float | None = None,
) -> Reply:
    """An answer; `cost` makes the fake report what it billed, as a gateway does."""
    return ChatReply(
        content,
        finish_reason=finish_reason,
        cached_tokens=cached_tokens,
        cache_write_tokens=cache_write_tokens,
        cost=cost,
    )


def tool_calls(
    *calls: ToolCall, text: str | None = None, cached_tokens: int = 0, cost: float | None = None
) -> Reply:
    """The model calls functions, `(name, arguments)` each, in one answer (parallel calls)."""
    specs = tuple(
        {"function": {"name": name, "arguments": json.dumps(dict(arguments))}}
        for name, arguments in calls
    )
    return ChatReply(
        text, specs, finish_reason="tool_calls", cached_tokens=cached_tokens, cost=cost
    )


def malformed_arguments(name: str) -> Reply:
    """A function call whose arguments are not JSON, as a weak local model may write."""
    spec = {"function": {"name": name, "arguments": '{"path": "a.md"'}}
    return ChatReply(None, (spec,), finish_reason="tool_calls")


def content_filtered() -> Reply:
    return ChatReply(None, finish_reason="content_filter")


def chat_error(
    status: int,
    error_type: str,
    code: str | None = None,
    message: str | None = None,
    retry_after: float | str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    header = None if retry_after is None else str(retry_after)
    message = message or f"Fake {code or error_type} ({status})."
    extra = tuple((headers or {}).items())
    return ChatErrorReply(status, error_type, code, message, header, extra)


def rate_limited(retry_after: float | str | None = None) -> Reply:
    return chat_error(429, "requests", "rate_limit_exceeded", "Fake rate limit.", retry_after)


def server_error(status: int = 500) -> Reply:
    return chat_error(status, "server_error", None, "Fake server error.")


def context_length_exceeded() -> Reply:
    return chat_error(
        400,
        "invalid_request_error",
        "context_length_exceeded",
        "This model's maximum context length is 8192 tokens; your messages used 9001 tokens.",
    )


def chunks(completion: JsonDict, request: JsonDict) -> str:
    """The streaming form of `completion`: a role chunk, content deltas, one chunk per tool call
    (its arguments in two pieces), the finish reason, then usage if asked for, then [DONE]."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {k: completion[k] for k in ("id", "created", "model")} | {
        "object": "chat.completion.chunk"
    }

    def chunk(delta: JsonDict, finish: str | None = None) -> JsonDict:
        return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": ""})]
    content = message.get("content") or ""
    events += [chunk({"content": content[i : i + _CHUNK]}) for i in range(0, len(content), _CHUNK)]
    for index, call in enumerate(message.get("tool_calls", [])):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        opening = {"index": index, "id": call["id"], "type": "function"}
        opening["function"] = {"name": call["function"]["name"], "arguments": arguments[:half]}
        events.append(chunk({"tool_calls": [opening]}))
        events.append(chunk({"tool_calls": [{"index": index, "function": _rest(arguments, half)}]}))
    events.append(chunk({}, choice["finish_reason"]))
    options: Any = request.get("stream_options") or {}
    if isinstance(options, Mapping) and options.get("include_usage"):
        events.append(base | {"choices": [], "usage": completion["usage"]})
    # SSE framing by hand, as in anthropic_replies.server_sent_events (the reason is there).
    lines = [f"data: {json.dumps(event)}\n\n" for event in events]
    return "".join(lines) + "data: [DONE]\n\n"


def _call_prefix(context: ReplyContext) -> str:
    return context.tool_id_prefix.replace("toolu_", "call_", 1)


def _rest(arguments: str, half: int) -> JsonDict:
    return {"arguments": arguments[half:]}
