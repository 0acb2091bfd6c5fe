"""The provider call of a model call: which provider serves the model, and one attempt at it
that heartbeats, streams the answer's text to the turn when asked, and turns a provider's
classified failure into the typed `ApplicationError` Temporal's retry policy reads."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.heartbeating import heartbeating
from turnkeeper.activities.providers.provider import (
    ModelCallError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    TextSink,
)
from turnkeeper.contracts.activity_io import ModelCallInput
from turnkeeper.contracts.errors import LLM_INVALID_REQUEST
from turnkeeper.contracts.events import TURN_EVENTS_TOPIC, TurnEvent
from turnkeeper.contracts.turn import split_model

# A beat soon after the call starts: a cancelled turn reaches a slow provider call in seconds.
HEARTBEAT_EVERY_S = 5.0
TEXT_BATCH = timedelta(milliseconds=300)
T = TypeVar("T")
# Hears a provider's 429 and how long its limit holds (the fleet's rate limiter backs off).
RateLimited = Callable[[float], Awaitable[None]]


def provider_for(providers: Mapping[str, ModelProvider], model: str) -> tuple[ModelProvider, str]:
    """The provider of `model` (`provider:name`) and the provider's own name for the model.

    Raises:
        ApplicationError: LLMInvalidRequest, not retried: this worker has no such provider.
    """
    provider_name, model_name = split_model(model)
    provider = providers.get(provider_name)
    if provider is None:
        raise ApplicationError(
            f"this worker has no provider {provider_name!r} for model {model!r}",
            type=LLM_INVALID_REQUEST,
            non_retryable=True,
        )
    return provider, model_name


async def call_provider(
    provider: ModelProvider,
    request: ModelRequest,
    call: ModelCallInput,
    on_rate_limited: RateLimited | None = None,
) -> ModelResponse:
    """One attempt at the provider, heartbeating meanwhile (inside an activity).

    Raises:
        ApplicationError: The provider's classified failure, with its type, whether another
            attempt may succeed and the provider's retry hint.
    """
    async with _text_deltas(call) as on_text:
        return await heartbeating(
            classified(provider.complete(request, on_text), on_rate_limited),
            every_s=HEARTBEAT_EVERY_S,
        )


@asynccontextmanager
async def _text_deltas(call: ModelCallInput) -> AsyncIterator[TextSink | None]:
    """Publishes the answer's text to the turn's event stream as it arrives, when the turn asked
    for it. Deltas travel as batched signals (a few history events per call), so it is opt-in."""
    if not call.stream_text:
        yield None
        return
    async with WorkflowStreamClient.from_within_activity(batch_interval=TEXT_BATCH) as stream:
        topic = stream.topic(TURN_EVENTS_TOPIC, type=TurnEvent)

        def publish(text: str) -> None:
            topic.publish(
                TurnEvent(
                    kind="text_delta",
                    at=datetime.now(UTC),
                    iteration=call.iteration,
                    model=call.model,
                    text=text,
                )
            )

        yield publish


async def classified(call: Awaitable[T], on_rate_limited: RateLimited | None = None) -> T:
    """`call`'s result; a `ModelCallError` it raises becomes an `ApplicationError` of the same
    type, retryable as classified, with the provider's `retry-after` as the next delay.

    The `ApplicationError` has no cause and no context: whatever a provider chained to its error
    (an SDK exception quoting a raw body, a parser's error quoting the answer) would reach the
    worker's log, the spans and the turn's failure in history, in plaintext."""
    try:
        return await call
    except ModelCallError as err:
        if on_rate_limited is not None and err.rate_limited_s is not None:
            await on_rate_limited(err.rate_limited_s)
        delay = timedelta(seconds=err.retry_after_s) if err.retry_after_s else None
        failure = ApplicationError(
            str(err), type=err.error_type, non_retryable=not err.retryable, next_retry_delay=delay
        )
    raise failure
