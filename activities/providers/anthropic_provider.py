"""The Anthropic Messages API as a `ModelProvider`, through the official `anthropic` SDK.

One `complete()` is exactly one HTTP attempt: the SDK's own retries are off because Temporal's
activity retry policy owns retrying (its backoff, its attempt count, its history). Failures are
classified by exception class, HTTP status and the body's `error.type`; message text decides only
what the API leaves untyped (a prompt over the context window), in `error_reading`.

A named `anthropic`-kind endpoint of `TURNKEEPER_PROVIDERS` (a gateway, a proxy) is this class
under its own name: its errors name the endpoint and its key variable, not Anthropic's.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast, get_args

import anthropic
import httpx2
from anthropic.types import Message as SdkMessage
from anthropic.types import (
    MessageParam,
    TextBlockParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
)
from anthropic.types import Usage as SdkUsage
from turnkeeper.activities.providers.attachment_parts import anthropic_block
from turnkeeper.activities.providers.error_reading import (
    says_context_overflow,
    status_words,
    transient_status_error,
)
from turnkeeper.activities.providers.provider import (
    ModelCallError,
    ModelRequest,
    ModelResponse,
    TextSink,
    estimate_input_tokens,
)
from turnkeeper.activities.providers.provider import cancellation_pending as _cancellation_pending
from turnkeeper.activities.providers.provider import transient as _transient
from turnkeeper.activities.providers.rate_headers import exhausted_for
from turnkeeper.activities.providers.redaction import api_message_excerpt, failure_without_secrets
from turnkeeper.activities.providers.reported_cost import reported_cost_usd
from turnkeeper.contracts.activity_io import StopReason
from turnkeeper.contracts.attachments import ACCEPTED_TYPES
from turnkeeper.contracts.errors import (
    LLM_AUTH_ERROR,
    LLM_CONTENT_FILTERED,
    LLM_CONTEXT_TOO_LONG,
    LLM_INVALID_REQUEST,
    LLM_TRANSIENT,
)
from turnkeeper.contracts.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from turnkeeper.contracts.names import PROVIDER_ANTHROPIC
from turnkeeper.contracts.tools import ToolDefinition
from turnkeeper.contracts.turn import Usage

from turnkeeper.ground.logs import get_logger

log = get_logger(__name__)

# How long one attempt may take. Passed explicitly on every call, which also stops the SDK from
# refusing a non-streaming call with a large max_tokens ("streaming is required").
DEFAULT_TIMEOUT_S: Final = 600.0

_API_MESSAGE_LIMIT: Final = 300
_EPHEMERAL: Final = {"type": "ephemeral"}
_ANTHROPIC: Final = "Anthropic"
_ANTHROPIC_KEY: Final = "ANTHROPIC_API_KEY"
_SdkBlockParam = TextBlockParam | ToolUseBlockParam | ToolResultBlockParam
_STOP_REASONS: Final = frozenset(get_args(StopReason))
_AUTH_ERROR_TYPES: Final = frozenset({"authentication_error", "permission_error"})
_TRANSIENT_ERROR_TYPES: Final = frozenset(
    {"rate_limit_error", "overloaded_error", "api_error", "timeout_error"}
)


class AnthropicProvider:
    """Calls `POST /v1/messages` once per `complete()`.

    Args:
        name: the provider's name in model strings (`anthropic`, or a named endpoint's name).
        api_key: overrides `ANTHROPIC_API_KEY`, which the SDK reads itself.
        base_url: overrides `ANTHROPIC_BASE_URL` (e.g. a proxy, or the tests' fake server).
        key_hint: what to set when the key is missing or refused, named in the error.
        timeout_s: how long one HTTP attempt may take.
        reports_cost: the endpoint (a gateway) reports what each call billed; the answer
            carries it, to price models the pricing table lacks.
    """

    def __init__(
        self,
        name: str = PROVIDER_ANTHROPIC,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        key_hint: str = _ANTHROPIC_KEY,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        reports_cost: bool = False,
    ) -> None:
        self.name = name
        self.reports_cost = reports_cost
        self.media_types = ACCEPTED_TYPES["anthropic"]
        # What errors call the provider: Anthropic itself, or the endpoint by its own name.
        self._label = _ANTHROPIC if name == PROVIDER_ANTHROPIC else name
        self._key_hint = key_hint
        self._api_key = api_key
        self._base_url = base_url
        self._timeout_s = timeout_s
        # Built on first use, so that a worker without a key starts and serves other providers.
        self._client: anthropic.AsyncAnthropic | None = None

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        try:
            client = self._sdk_client()
            arguments = {
                "model": request.model,
                "max_tokens": request.max_tokens,
                "messages": _to_sdk_messages(request.messages),
                "system": request.system or anthropic.omit,
                "tools": _to_sdk_tools(request.tools) or anthropic.omit,
                "timeout": self._timeout_s,
            }
            if request.prompt_cache:
                arguments |= cache_breakpoints(request)
            headers: Mapping[str, str] | None = None
            if on_text is None:
                # The raw response, for its headers: the rate-limit headers every answer carries
                # (`rate_headers.exhausted_for`) and the cost header a gateway sends.
                raw = await client.messages.with_raw_response.create(**arguments)
                # The SDK's async raw response parses asynchronously (the body is read then).
                message, headers = await raw.parse(), raw.headers
            else:
                message, headers = await _streamed(client, arguments, on_text, self._label)
        # A stream cut mid-body surfaces as the transport's own error, which the SDK does not
        # wrap once the response has begun.
        except (
            anthropic.AnthropicError,
            json.JSONDecodeError,
            httpx2.TransportError,
            RecursionError,  # a body nested deeper than the JSON parser goes
        ) as exc:
            failure = self._failure(exc, request.model)
        else:
            response = _from_sdk_response(message, self._label)
            if self.reports_cost:
                response.reported_cost_usd = reported_cost_usd(message.usage, headers)
            if headers is not None:
                response.rate_limited_s = exhausted_for(headers, time.time())
            return response
        # Raised here, not in the except block: the SDK's exception quotes the raw body (a key
        # echoed in a 401 included) and must not ride along as this one's context.
        raise failure

    def _failure(self, exc: BaseException, model: str) -> BaseException:
        """What a failed call raises: the cancellation, or the classified, redacted failure."""
        if _cancellation_pending():
            return asyncio.CancelledError()
        secrets = _secrets(self._client)
        error = classify_error(
            exc,
            model=model,
            timeout_s=self._timeout_s,
            secrets=secrets,
            provider=self._label,
            key_hint=self._key_hint,
        )
        return failure_without_secrets(error, secrets)

    async def count_input_tokens(self, request: ModelRequest) -> int:
        """The API's own count of the request's input tokens (the count_tokens endpoint is not
        billed); the character heuristic when the count cannot be had."""
        try:
            counted = await self._sdk_client().messages.count_tokens(
                model=request.model,
                messages=_to_sdk_messages(request.messages),
                system=request.system or anthropic.omit,
                tools=_to_sdk_tools(request.tools) or anthropic.omit,
                timeout=self._timeout_s,
            )
            return counted.input_tokens
        except (anthropic.AnthropicError, json.JSONDecodeError, AttributeError, TypeError) as exc:
            if _cancellation_pending():
                raise asyncio.CancelledError from exc
            log.warning("count_tokens failed; estimating", error_type=type(exc).__name__)
            return estimate_input_tokens(request)

    def use_key(self, api_key: str) -> None:
        """Sends `api_key` from the next call on (a key read again after a 401); calls in
        flight finish with the key they started with, and the connection pool is kept."""
        self._api_key = api_key
        if self._client is not None:
            self._client = self._client.with_options(api_key=api_key)

    async def aclose(self) -> None:
        """Closes the HTTP connections; the next `complete()` opens new ones."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    def _sdk_client(self) -> anthropic.AsyncAnthropic:
        if self._client is None:
            client = anthropic.AsyncAnthropic(
                api_key=self._api_key,
                base_url=self._base_url,
                timeout=self._timeout_s,
                max_retries=0,
            )
            if not _has_credentials(client):
                raise ModelCallError(
                    f"No {self._label} credentials were found; set {self._key_hint} on the worker.",
                    error_type=LLM_AUTH_ERROR,
                    retryable=False,
                )
            self._client = client
        return self._client


# What the SDK's stream accumulator raises on events of the wrong shape (it asserts on them):
# a broken answer from the provider or a proxy, not a defect of ours.
_UNREADABLE_STREAM: Final = (AssertionError, KeyError, TypeError, ValueError, AttributeError)


async def _streamed(
    client: anthropic.AsyncAnthropic, arguments: dict[str, object], on_text: TextSink, label: str
) -> tuple[SdkMessage, Mapping[str, str]]:
    async with client.messages.stream(**arguments) as stream:  # type: ignore[arg-type]
        try:
            async for text in stream.text_stream:
                on_text(text)
            return await stream.get_final_message(), stream.response.headers
        except anthropic.AnthropicError:
            raise
        except _UNREADABLE_STREAM as exc:
            if isinstance(exc, json.JSONDecodeError):
                raise
            raise _transient(
                f"{label} streamed events that are not a Messages API answer "
                f"({type(exc).__name__})."
            ) from exc


def _has_credentials(client: anthropic.AsyncAnthropic) -> bool:
    # Without any, the SDK raises a bare TypeError at request time; name the problem instead.
    credentials = getattr(client, "credentials", None)
    return any(value is not None for value in (client.api_key, client.auth_token, credentials))


def _secrets(client: anthropic.AsyncAnthropic | None) -> list[str]:
    """The credentials the client sends, which an error body may echo."""
    return [s for s in (client.api_key, client.auth_token) if s] if client else []


def _to_sdk_messages(messages: Sequence[Message]) -> list[MessageParam]:
    return [
        {"role": message.role, "content": [_to_sdk_block(block) for block in message.content]}
        for message in messages
    ]


def _to_sdk_block(block: ContentBlock) -> _SdkBlockParam:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResultBlock):
        return _to_sdk_tool_result(block)
    return cast(_SdkBlockParam, anthropic_block(block))


def _to_sdk_tool_result(block: ToolResultBlock) -> ToolResultBlockParam:
    content: Any = (
        block.content
        if isinstance(block.content, str)
        else [
            {"type": "text", "text": part.text}
            if isinstance(part, TextBlock)
            else anthropic_block(part)
            for part in block.content
        ]
    )
    return {
        "type": "tool_result",
        "tool_use_id": block.tool_use_id,
        "content": content,
        "is_error": block.is_error,
    }


def _to_sdk_tools(tools: Sequence[ToolDefinition]) -> list[ToolParam]:
    params: list[ToolParam] = []
    for tool in tools:
        param: ToolParam = {"name": tool.name, "input_schema": tool.input_schema}
        if tool.description:
            param["description"] = tool.description
        params.append(param)
    return params


def cache_breakpoints(request: ModelRequest) -> dict[str, Any]:
    """`messages`, `system` and `tools` with prompt-cache breakpoints, at most the API's four:
    after the tools, after the system prompt, on the newest message, and on the newest message
    of the previous call (the user message before the last answer). The API looks for a cached
    prefix only at a breakpoint and the 20 blocks before it; the last one makes each call read
    exactly the prefix the previous call wrote, however many tool results came in between."""
    marked: dict[str, Any] = {}
    tools = _to_sdk_tools(request.tools)
    if tools:
        tools[-1] = {**tools[-1], "cache_control": _EPHEMERAL}
        marked["tools"] = tools
    if request.system:
        marked["system"] = [{"type": "text", "text": request.system, "cache_control": _EPHEMERAL}]
    messages = _to_sdk_messages(request.messages)
    users = [i for i, message in enumerate(messages) if message["role"] == "user"]
    for index in {len(messages) - 1, *users[-2:-1]}:
        content = list(messages[index]["content"])
        if content:
            content[-1] = {**content[-1], "cache_control": _EPHEMERAL}  # type: ignore[typeddict-unknown-key]
            messages[index] = {**messages[index], "content": content}
    marked["messages"] = messages
    return marked


def _from_sdk_response(message: SdkMessage, label: str = _ANTHROPIC) -> ModelResponse:
    try:
        return _read_sdk_response(message, label)
    except (AttributeError, TypeError, ValueError) as exc:
        # The SDK does not validate a 200's JSON against the schema; valid JSON of the wrong
        # shape is a broken proxy's answer, like a body that is not JSON at all.
        request = _request_note(getattr(message, "_request_id", None))
        raise _transient(
            f"{label} returned a 200 that is not a Messages API response "
            f"({type(exc).__name__}){request}."
        ) from exc


def _read_sdk_response(message: SdkMessage, label: str) -> ModelResponse:
    return ModelResponse(
        content=_from_sdk_content(message),
        stop_reason=_stop_reason(message, label),
        usage=_from_sdk_usage(message.usage),
        model=message.model,
    )


def _from_sdk_content(message: SdkMessage) -> list[ContentBlock]:
    blocks: list[ContentBlock] = []
    # Block types we do not model (thinking, server tools) are dropped; order is kept.
    for block in message.content:
        if block.type == "text":
            blocks.append(TextBlock(text=block.text))
        elif block.type == "tool_use":
            blocks.append(ToolUseBlock(id=block.id, name=block.name, input=dict(block.input)))
    return blocks


def _from_sdk_usage(usage: SdkUsage) -> Usage:
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=usage.cache_read_input_tokens or 0,
        cache_write_tokens=usage.cache_creation_input_tokens or 0,
    )


def _stop_reason(message: SdkMessage, label: str) -> StopReason:
    """The stop reason, or the non-retryable failure that the API reports as a stop reason."""
    reason = message.stop_reason
    request_id = getattr(message, "_request_id", None)
    request = f", request {request_id}" if request_id else ""
    if reason == "refusal":
        raise ModelCallError(
            f"{label}'s {message.model} declined to answer (stop_reason refusal{request}).",
            error_type=LLM_CONTENT_FILTERED,
            retryable=False,
        )
    if reason == "model_context_window_exceeded":
        raise ModelCallError(
            f"The conversation filled the context window of {message.model} at "
            f"{message.usage.input_tokens} input tokens (stop_reason {reason}{request}).",
            error_type=LLM_CONTEXT_TOO_LONG,
            retryable=False,
        )
    if reason not in _STOP_REASONS:
        # A stop reason this runtime does not know would come back on every retry.
        raise ModelCallError(
            f"{label} ended the answer with stop_reason {reason!r}, which turnkeeper does "
            f"not handle{_request_note(request_id)}.",
            error_type=LLM_INVALID_REQUEST,
            retryable=False,
        )
    return cast(StopReason, reason)


def classify_error(
    exc: BaseException,
    *,
    model: str = "",
    timeout_s: float | None = None,
    secrets: Sequence[str] = (),
    provider: str = _ANTHROPIC,
    key_hint: str = _ANTHROPIC_KEY,
) -> ModelCallError:
    """The `ModelCallError` for a failed Messages API call, decided by class, status and error
    type (and, for a context overflow the API leaves untyped, its documented wording).

    Args:
        exc: what the SDK raised.
        model: the model asked for, named in the message.
        timeout_s: the client timeout, named in the message of a timeout.
        secrets: the credentials sent, redacted from the API's message before it is cut.
        provider: who was called, as the message names it (a named endpoint by its name).
        key_hint: the variable that holds the key, named when it is missing or refused.
    """
    if isinstance(exc, anthropic.APIStatusError):
        return _classify_status(exc, model, secrets, provider, key_hint)
    if isinstance(exc, anthropic.APITimeoutError):
        limit = f" within {timeout_s:g} s" if timeout_s is not None else ""
        return _transient(f"{provider} did not answer{limit} (client timeout).")
    if isinstance(exc, anthropic.APIConnectionError):
        cause = type(exc.__cause__).__name__ if exc.__cause__ else "connection error"
        return _transient(f"Could not reach {provider} at {_origin(exc.request.url)} ({cause}).")
    if isinstance(exc, json.JSONDecodeError):
        # The SDK parses a 200 body without wrapping a decode failure: a broken proxy or a cut
        # connection, which the next attempt may not meet.
        where = f"line {exc.lineno} column {exc.colno}"
        return _transient(f"{provider} returned a 200 whose body is not valid JSON ({where}).")
    if isinstance(exc, anthropic.APIResponseValidationError):
        request = _request_note(exc.response.headers.get("request-id"))
        return _transient(
            f"{provider} returned a {exc.status_code} body that is not a Messages API "
            f"response{request}."
        )
    if isinstance(exc, anthropic.CredentialsError):
        return ModelCallError(
            f"{provider} credentials could not be loaded ({type(exc).__name__}); "
            f"set {key_hint} on the worker.",
            error_type=LLM_AUTH_ERROR,
            retryable=False,
        )
    if isinstance(exc, RecursionError):
        return _transient(f"{provider} returned a body nested too deeply to parse.")
    if isinstance(exc, httpx2.TransportError):
        return _transient(f"The connection to {provider} broke mid-answer ({type(exc).__name__}).")
    return _transient(f"The anthropic SDK failed with {type(exc).__name__} calling {provider}.")


def _classify_status(
    exc: anthropic.APIStatusError,
    model: str,
    secrets: Sequence[str],
    provider: str,
    key_hint: str,
) -> ModelCallError:
    status, error_type = exc.status_code, exc.type
    what = f"{provider} returned {status_words(status, error_type, missing='with no error type')}"
    what += f" for model {model!r}" if model else ""
    what += _request_note(exc.request_id)
    if exc.api_message:
        # Shown for its figures (e.g. prompt tokens vs maximum); branched on only through
        # `error_reading`, for what the API does not type.
        excerpt = api_message_excerpt(exc.api_message, secrets, _API_MESSAGE_LIMIT)
        what += f": {excerpt.rstrip('.')}"
    kind = _status_kind(status, error_type, exc.api_message)
    if kind != LLM_TRANSIENT:
        hint = f"; check {key_hint}" if kind == LLM_AUTH_ERROR else ""
        return ModelCallError(f"{what}{hint}.", error_type=kind, retryable=False, status=status)
    return transient_status_error(what, status, exc.response.headers, exc.api_message)


def _status_kind(status: int, error_type: str | None, message: str | None = None) -> str:
    """Which contract error a status means; `error.type` decides only for unlisted 4xx."""
    if status in (401, 403):
        return LLM_AUTH_ERROR
    if status == 413:
        return LLM_CONTEXT_TOO_LONG
    # 408 is the server's own request timeout: nothing is wrong with the request.
    if status in (408, 429) or status >= 500:
        return LLM_TRANSIENT
    if status == 400 and says_context_overflow(message):
        # Anthropic types an overflow only as `invalid_request_error`; so does a gateway.
        return LLM_CONTEXT_TOO_LONG
    if status in (400, 404):
        return LLM_INVALID_REQUEST
    if error_type in _TRANSIENT_ERROR_TYPES:
        return LLM_TRANSIENT
    if error_type in _AUTH_ERROR_TYPES:
        return LLM_AUTH_ERROR
    if error_type == "request_too_large":
        return LLM_CONTEXT_TOO_LONG
    return LLM_INVALID_REQUEST


def _request_note(request_id: str | None) -> str:
    return f" (request {request_id})" if request_id else ""


def _origin(url: httpx2.URL) -> str:
    # Only scheme, host and port: a URL may carry credentials in its user info or query.
    return f"{url.scheme}://{url.host}" + (f":{url.port}" if url.port else "")
