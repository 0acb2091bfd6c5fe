"""The seam between the model-call activity and a model provider.

A provider turns one `ModelRequest` into one `ModelResponse`, or raises `ModelCallError`
classified by the provider's status codes and error types (message text only where the API leaves
a failure untyped: `error_reading`). Retrying is Temporal's job, so providers make exactly one
attempt.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import time
from collections.abc import Callable
from typing import Protocol

from pydantic import BaseModel, Field
from turnkeeper.contracts.activity_io import StopReason
from turnkeeper.contracts.attachments import ACCEPTED_TYPES, attachment_data, attachment_tokens
from turnkeeper.contracts.errors import LLM_TRANSIENT
from turnkeeper.contracts.messages import ContentBlock, Message
from turnkeeper.contracts.tools import ToolDefinition
from turnkeeper.contracts.turn import Usage


class ModelRequest(BaseModel):
    model: str  # the provider's own model name, without the "provider:" prefix
    system: str = ""
    messages: list[Message]
    tools: list[ToolDefinition] = Field(default_factory=list)
    max_tokens: int
    # Mark the prefix for the provider's prompt cache (Anthropic); others ignore it.
    prompt_cache: bool = False


class ModelResponse(BaseModel):
    content: list[ContentBlock]
    stop_reason: StopReason
    usage: Usage
    model: str
    # What the endpoint says it billed (a gateway's `x-litellm-response-cost` or `usage.cost`);
    # set only by providers configured to trust it (`reports_cost`).
    reported_cost_usd: float | None = None
    # Set when the answer's rate-limit headers say a limit of the key is spent (remaining 0):
    # seconds until it resets (`rate_headers.exhausted_for`), shared with the fleet's limiter.
    rate_limited_s: float | None = None


class ModelCallError(Exception):
    """A classified provider failure.

    Args:
        message: one sentence for the turn's failure message.
        error_type: a constant of `contracts.errors` (LLM_TRANSIENT when retryable).
        retryable: whether another attempt may succeed.
        retry_after_s: the provider's own retry hint (`retry-after-ms`, `retry-after`, or a
            gateway's relayed `llm_provider-retry-after`), if it gave one.
        rate_limited_s: set on a 429: how long the provider's rate limit holds
            (`activities/providers/rate_headers.py`), shared with the fleet's limiter.
        status: the HTTP status the provider answered with, when it answered with one (a 401
            makes a key read from a file or a command be read again: `rotating_key.py`).
    """

    def __init__(
        self,
        message: str,
        *,
        error_type: str,
        retryable: bool,
        retry_after_s: float | None = None,
        rate_limited_s: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.rate_limited_s = rate_limited_s
        self.error_type = error_type
        self.retryable = retryable
        self.retry_after_s = retry_after_s


TextSink = Callable[[str], None]


class ModelProvider(Protocol):
    name: str

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        """One model call. With `on_text`, a provider that streams passes each piece of answer
        text to it as it arrives; the response is the same either way."""
        ...

    async def count_input_tokens(self, request: ModelRequest) -> int:
        """How many input tokens `request` will bill, for the pre-call budget check."""
        ...


def reports_cost(provider: object) -> bool:
    """Whether a provider reports what each call billed (`reports_cost` on a named endpoint).
    An optional trait, read with a default: most providers (the SDKs' own APIs, the demo, a
    test's scripted model) report tokens only."""
    return getattr(provider, "reports_cost", False) is True


def media_types(provider: object) -> frozenset[str]:
    """The attachment media types a provider's API takes: an optional trait like
    `reports_cost`, read with Anthropic's set as the default (the demo, a test's model)."""
    accepted = getattr(provider, "media_types", None)
    return accepted if isinstance(accepted, frozenset) else ACCEPTED_TYPES["anthropic"]


def estimate_input_tokens(request: ModelRequest) -> int:
    """Four characters a token over the request's JSON: the usual rough rule for English text
    and code. It counts JSON punctuation too, so it leans high, which is the safe side for a
    budget check. An attachment counts by its own rule (`attachment_tokens`), not its base64."""
    size = len(request.system) + len(request.model_dump_json(include={"messages", "tools"}))
    tokens = 0
    for data, media_type in attachment_data(request.messages):
        size -= len(data)
        tokens += attachment_tokens(media_type, len(data) * 3 // 4)
    return max(1, size // 4 + tokens)


def transient(message: str, retry_after_s: float | None = None) -> ModelCallError:
    """A failure another attempt may not meet (rate limit, overload, 5xx, network)."""
    return ModelCallError(
        message, error_type=LLM_TRANSIENT, retryable=True, retry_after_s=retry_after_s
    )


def cancellation_pending() -> bool:
    """Whether the running task is being cancelled: an SDK error raised while the activity is
    cancelled is the cancellation, not a provider failure."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from an HTTP `retry-after` (seconds or an HTTP date); None if unusable."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if moment.tzinfo is None:
            return None
        seconds = max(0.0, moment.timestamp() - (time.time() if now is None else now))
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return seconds
