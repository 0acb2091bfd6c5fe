"""The provider call of a model call: which provider serves the model, and one attempt at it
that heartbeats, streams the answer's text to the turn when asked, and turns a provider's
classified failure into the typed `ApplicationError` Temporal's retry policy reads."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from temporalio import activity
from temporalio.contrib.workflow_streams import TopicHandle, WorkflowStreamClient
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.heartbeating import heartbeating
from turnkeeper.activities.providers.provider import (
    ModelCallError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
)
from turnkeeper.contracts.activity_io import ModelCallInput
from turnkeeper.contracts.errors import LLM_INVALID_REQUEST
from turnkeeper.contracts.events import TURN_EVENTS_TOPIC, EventKind, TurnEvent
from turnkeeper.contracts.turn import split_model

# A beat soon after the call starts: a cancelled turn reaches a slow provider call in seconds.
HEARTBEAT_EVERY_S = 5.0
TEXT_BATCH = timedelta(milliseconds=300)
T = TypeVar("T")
# Told a 429's hold (seconds), to share it with the fleet's limiter before the retry.
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
    async with _text_deltas(call) as deltas:
        try:
            return await heartbeating(
                classified(
                    provider.complete(request, deltas.publish if deltas else None),
                    on_rate_limited,
                ),
                every_s=HEARTBEAT_EVERY_S,
            )
        except BaseException as failure:
            if deltas is not None:
                deltas.discard(failure)
            raise


class _TextDeltas:
    """The answer's text as it streams in, published to the turn's event stream; and, when the
    attempt fails after some of it went out, one `text_discarded` event, so that a client takes
    it back before a retry's text follows instead of showing both."""

    def __init__(self, topic: TopicHandle[TurnEvent], call: ModelCallInput) -> None:
        self._topic = topic
        self._call = call
        self._published_chars = 0

    def publish(self, text: str) -> None:
        self._published_chars += len(text)
        self._send("text_delta", text=text)

    def discard(self, failure: BaseException) -> None:
        if not self._published_chars:
            return
        reason = str(failure) if isinstance(failure, ApplicationError) else "cancelled"
        self._send(
            "text_discarded",
            attempt=activity.info().attempt,
            discarded_chars=self._published_chars,
            reason=reason,
        )

    def _send(self, kind: EventKind, **fields: object) -> None:
        event = {"kind": kind, "at": datetime.now(UTC), "iteration": self._call.iteration}
        self._topic.publish(TurnEvent.model_validate(event | {"model": self._call.model} | fields))


@asynccontextmanager
async def _text_deltas(call: ModelCallInput) -> AsyncIterator[_TextDeltas | None]:
    """The turn's text stream, when the turn asked for it. Deltas travel as batched signals (a
    few history events per call), so it is opt-in."""
    if not call.stream_text:
        yield None
        return
    async with WorkflowStreamClient.from_within_activity(batch_interval=TEXT_BATCH) as stream:
        yield _TextDeltas(stream.topic(TURN_EVENTS_TOPIC, type=TurnEvent), call)


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
