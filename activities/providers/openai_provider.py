"""Any OpenAI-compatible Chat Completions endpoint as a `ModelProvider`, through the official
`openai` SDK (the optional extra `turnkeeper[openai]`): OpenAI itself, gateways (LiteLLM,
OpenRouter, Azure) and local servers (vLLM, Ollama, llama.cpp).

As with Anthropic, one `complete()` is exactly one HTTP attempt (the SDK's retries are off:
Temporal's retry policy owns retrying) and failures are classified by exception class, HTTP
status and the body's `error.code` / `error.type`; message text decides only what the API leaves
untyped (a gateway's context overflow), in `error_reading`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from turnkeeper.activities.providers.error_reading import (
    says_context_overflow,
    status_words,
    transient_status_error,
)
from turnkeeper.activities.providers.openai_messages import (
    MalformedAnswer,
    from_chat_message,
    to_chat_messages,
    to_chat_tools,
    with_cache_breakpoints,
    with_cached_tools,
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
from turnkeeper.contracts.turn import Usage

from turnkeeper.ground.logs import get_logger

if TYPE_CHECKING:
    import openai

log = get_logger(__name__)

DEFAULT_TIMEOUT_S: Final = 600.0
# turnkeeper is installed from a checkout or a git URL, not from a package index, so the hint
# names both ways of adding the extra.
OPENAI_EXTRA: Final = "pip install -e '.[openai]' in a turnkeeper checkout, or pip install openai"
_API_MESSAGE_LIMIT: Final = 300
_STOP_REASONS: Final[dict[str, StopReason]] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}
# Codes OpenAI and compatible servers put in `error.code` for a prompt over the context window.
_CONTEXT_CODES: Final = frozenset({"context_length_exceeded", "string_above_max_length"})
_AUTH_CODES: Final = frozenset({"invalid_api_key", "insufficient_quota"})


class OpenAICompatibleProvider:
    """Calls `POST {base_url}/chat/completions` once per `complete()`.

    Args:
        name: the provider's name in model strings (`openai`, or a named endpoint's name).
        api_key: None: the SDK reads `OPENAI_API_KEY`.
        base_url: None: the SDK reads `OPENAI_BASE_URL`, else OpenAI's own API.
        key_hint: what to set when the key is missing or refused, named in the error.
        max_tokens_field: `max_completion_tokens` (OpenAI's current name, which its reasoning
            models require) or `max_tokens` (the name every compatible server reads).
        timeout_s: how long one HTTP attempt may take.
        reports_cost: the endpoint (a gateway) reports what each call billed; the answer
            carries it, to price models the pricing table lacks.
        cache_control: the endpoint accepts Anthropic's cache breakpoints in chat messages (a
            gateway in front of Claude models); sent when the request asks for prompt caching.
    """

    def __init__(
        self,
        name: str = "openai",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        key_hint: str = "OPENAI_API_KEY",
        max_tokens_field: str = "max_completion_tokens",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        reports_cost: bool = False,
        cache_control: bool = False,
    ) -> None:
        self.name = name
        self.reports_cost = reports_cost
        self.media_types = ACCEPTED_TYPES["openai"]
        self._cache_control = cache_control
        self._api_key = api_key
        self._base_url = base_url
        self._key_hint = key_hint
        self._max_tokens_field = max_tokens_field
        self._timeout_s = timeout_s
        self._client: openai.AsyncOpenAI | None = None

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        sdk = _sdk()
        try:
            client = self._sdk_client()
            arguments = self._arguments(request)
            headers: Mapping[str, str] | None = None
            if on_text is None:
                # The raw response, for its headers: the rate-limit headers every answer carries
                # (`rate_headers.exhausted_for`) and the cost header a gateway sends.
                raw = await client.chat.completions.with_raw_response.create(**arguments)
                completion, headers = raw.parse(), raw.headers
            else:
                options = {"include_usage": True}
                async with client.chat.completions.stream(
                    **arguments, stream_options=options
                ) as stream:
                    async for event in stream:
                        if event.type == "content.delta" and event.delta:
                            on_text(event.delta)
                    completion = await stream.get_final_completion()
        except (sdk.OpenAIError, json.JSONDecodeError) as exc:
            failure = self._failure(exc, request.model)
        else:
            response = self._response(completion, request.model)
            if self.reports_cost:
                cost = reported_cost_usd(getattr(completion, "usage", None), headers)
                response.reported_cost_usd = cost
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
        return failure_without_secrets(self._classify(exc, model), self._secrets())

    def _secrets(self) -> list[str]:
        """The key the client sends, which an error body may echo."""
        key = getattr(self._client, "api_key", None)
        return [key] if isinstance(key, str) and key else []

    async def count_input_tokens(self, request: ModelRequest) -> int:
        # Chat Completions has no counting endpoint; the heuristic leans high, the safe side.
        return estimate_input_tokens(request)

    def use_key(self, api_key: str) -> None:
        """Sends `api_key` from the next call on (a key read again after a 401); calls in
        flight finish with the key they started with, and the connection pool is kept."""
        self._api_key = api_key
        if self._client is not None:
            self._client = self._client.with_options(api_key=api_key)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        messages = to_chat_messages(request.system, request.messages)
        if self._cache_control and request.prompt_cache:
            messages = with_cache_breakpoints(messages)
        arguments: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            self._max_tokens_field: request.max_tokens,
            "timeout": self._timeout_s,
        }
        if request.tools:
            tools = to_chat_tools(request.tools)
            cached = self._cache_control and request.prompt_cache
            arguments["tools"] = with_cached_tools(tools) if cached else tools
        return arguments

    def _sdk_client(self) -> openai.AsyncOpenAI:
        if self._client is None:
            sdk = _sdk()
            try:
                self._client = sdk.AsyncOpenAI(
                    api_key=self._api_key,
                    base_url=self._base_url,
                    timeout=self._timeout_s,
                    max_retries=0,
                )
            except sdk.OpenAIError as exc:  # raised when no key is given or in the environment
                raise ModelCallError(
                    f"No API key for provider {self.name!r}; set {self._key_hint} on the worker.",
                    error_type=LLM_AUTH_ERROR,
                    retryable=False,
                ) from exc
        return self._client

    def _response(self, completion: Any, model: str) -> ModelResponse:
        try:
            choice = completion.choices[0]
            message = choice.message
            refusal = getattr(message, "refusal", None)
            if refusal or choice.finish_reason == "content_filter":
                raise ModelCallError(
                    f"{self.name}'s {model} declined to answer "
                    f"(finish_reason {choice.finish_reason}{_request_note(completion)}).",
                    error_type=LLM_CONTENT_FILTERED,
                    retryable=False,
                )
            return ModelResponse(
                content=from_chat_message(message.content, message.tool_calls),
                stop_reason=self._stop_reason(choice.finish_reason, completion),
                usage=usage_of(completion.usage),
                model=str(completion.model or model),
            )
        except MalformedAnswer as exc:
            raise _transient(f"{self.name} answered with a malformed message: {exc}.") from exc
        except (AttributeError, IndexError, TypeError, ValueError) as exc:
            # The SDK does not validate a 200 against the schema; a broken proxy's answer.
            raise _transient(
                f"{self.name} returned a 200 that is not a chat completion "
                f"({type(exc).__name__}){_request_note(completion)}."
            ) from exc

    def _stop_reason(self, finish_reason: str | None, completion: Any) -> StopReason:
        if finish_reason in _STOP_REASONS:
            return _STOP_REASONS[finish_reason]
        # A reason this runtime does not know would come back on every retry.
        raise ModelCallError(
            f"{self.name} ended the answer with finish_reason {finish_reason!r}, which "
            f"turnkeeper does not handle{_request_note(completion)}.",
            error_type=LLM_INVALID_REQUEST,
            retryable=False,
        )

    def _classify(self, exc: BaseException, model: str) -> ModelCallError:
        sdk = _sdk()
        where = self.name
        if isinstance(exc, sdk.APIStatusError):
            return self._classify_status(exc, model)
        if isinstance(exc, sdk.APITimeoutError):
            return _transient(f"{where} did not answer within {self._timeout_s:g} s.")
        if isinstance(exc, sdk.APIConnectionError):
            cause = type(exc.__cause__).__name__ if exc.__cause__ else "connection error"
            url = exc.request.url
            origin = f"{url.scheme}://{url.host}" + (f":{url.port}" if url.port else "")
            return _transient(f"Could not reach {where} at {origin} ({cause}).")
        if isinstance(exc, json.JSONDecodeError):
            return _transient(f"{where} returned a 200 whose body is not valid JSON.")
        if isinstance(exc, sdk.APIResponseValidationError):
            return _transient(f"{where} returned a body that is not a chat completion.")
        if isinstance(exc, sdk.APIError):
            return self._classify_stream_error(exc, model)
        return _transient(f"The openai SDK failed with {type(exc).__name__} calling {where}.")

    def _classify_status(self, exc: Any, model: str) -> ModelCallError:
        status, code, kind = exc.status_code, exc.code, exc.type
        what = f"{self.name} returned {status_words(status, code, kind)}"
        what += f" for model {model!r}" if model else ""
        what += _request_note(exc)
        raw_message = _raw_api_message(exc.body)
        body_message = _api_message(exc.body, self._secrets())
        if body_message:
            # Shown for its figures (tokens asked vs allowed); branched on only through
            # `error_reading`, for what the API does not type.
            what += f": {body_message.rstrip('.')}"
        error_type = _status_kind(status, code, kind, raw_message)
        if error_type != LLM_TRANSIENT:
            hint = f"; check {self._key_hint}" if error_type == LLM_AUTH_ERROR else ""
            return ModelCallError(
                f"{what}{hint}.", error_type=error_type, retryable=False, status=status
            )
        return transient_status_error(what, status, exc.response.headers, raw_message)

    def _classify_stream_error(self, exc: Any, model: str) -> ModelCallError:
        """An error chunk in the middle of a stream (a gateway relaying an upstream failure after
        the 200): no status, but the chunk's message and code, which are kept."""
        code = getattr(exc, "code", None)
        raw_message = _raw_api_message(exc.body) or str(getattr(exc, "message", "") or "")
        message = api_message_excerpt(raw_message, self._secrets(), _API_MESSAGE_LIMIT)
        what = f"{self.name} sent an error in the middle of its stream"
        what += f" for model {model!r}" if model else ""
        what += f" ({code})" if code else ""
        what += f": {message.rstrip('.')}" if message else ""
        if code in _CONTEXT_CODES or says_context_overflow(raw_message):
            return ModelCallError(f"{what}.", error_type=LLM_CONTEXT_TOO_LONG, retryable=False)
        # The answer had begun: whatever broke it upstream, another attempt may not meet it.
        return _transient(f"{what}.")


def _status_kind(status: int, code: str | None, kind: str | None, message: str = "") -> str:
    """Which contract error a status means; `error.code` / `error.type` refine a 400."""
    if code in _CONTEXT_CODES or status == 413:
        return LLM_CONTEXT_TOO_LONG
    if status == 400 and says_context_overflow(message):
        # A gateway (LiteLLM) relays an overflow as a 400 that only its message names.
        return LLM_CONTEXT_TOO_LONG
    if status in (401, 403):
        return LLM_AUTH_ERROR
    if status in (408, 409, 429) or status >= 500:
        # 429 with `insufficient_quota` will not pass by waiting: billing must change.
        if status == 429 and code == "insufficient_quota":
            return LLM_AUTH_ERROR
        return LLM_TRANSIENT
    if code in _AUTH_CODES or kind in ("authentication_error", "permission_error"):
        return LLM_AUTH_ERROR
    if code == "content_filter" or code == "content_policy_violation":
        return LLM_CONTENT_FILTERED
    return LLM_INVALID_REQUEST


def usage_of(usage: Any) -> Usage:
    """Chat Completions usage in our terms: `prompt_tokens` includes the tokens read from and
    written to the prompt cache, which we count apart (as Anthropic reports them) so they are
    priced at the cache prices. Writes come from gateways in front of Claude models:
    `prompt_tokens_details.cache_write_tokens` (OpenRouter, LiteLLM) or Anthropic's own
    `cache_creation_input_tokens` beside the usage (LiteLLM)."""
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = _count(details, "cached_tokens")
    written = _count(details, "cache_write_tokens") or _count(usage, "cache_creation_input_tokens")
    prompt = usage.prompt_tokens or 0
    return Usage(
        input_tokens=max(0, prompt - cached - written),
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


def _count(source: object, field: str) -> int:
    value = getattr(source, field, None) if source is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _sdk() -> Any:
    """The `openai` SDK, imported on first use: a worker without the extra still serves other
    providers, and says what to install when asked for this one."""
    try:
        import openai
    except ImportError as exc:
        raise ModelCallError(
            f"this worker cannot call OpenAI-compatible models: the openai SDK is not "
            f"installed ({OPENAI_EXTRA})",
            error_type=LLM_INVALID_REQUEST,
            retryable=False,
        ) from exc
    return openai


def _api_message(body: object, secrets: list[str]) -> str:
    message = _raw_api_message(body)
    return api_message_excerpt(message, secrets, _API_MESSAGE_LIMIT) if message else ""


def _raw_api_message(body: object) -> str:
    """`error.message` of an error body, whole: for classification only, never shown."""
    error = body.get("error", body) if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else ""


def _request_note(source: Any) -> str:
    request_id = getattr(source, "request_id", None) or getattr(source, "_request_id", None)
    return f" (request {request_id})" if isinstance(request_id, str) and request_id else ""
