"""A provider's 429 and its rate-limit headers become how long the fleet backs off
(`activities/providers/rate_headers.py`), so do the headers of a successful answer that spent a
limit, and the fake's "429 above N per minute" mode."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from turnkeeper.activities.providers.anthropic_provider import AnthropicProvider
from turnkeeper.activities.providers.provider import ModelCallError, ModelRequest
from turnkeeper.activities.providers.rate_headers import (
    DEFAULT_BACKOFF_S,
    exhausted_for,
    parse_duration,
    rate_limited_for,
)
from turnkeeper.contracts.messages import Message

from tests.fakes import fake_anthropic as fake
from tests.fakes.anthropic_replies import MessageReply
from tests.fakes.fake_anthropic import FakeAnthropic, start_fake_anthropic
from tests.fakes.provider_rate_limit import ProviderRateLimit, retry_after_header

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
NOW_ISO = "2027-01-15T08:00:00Z"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5), ("0s", 0.0)],
)
def test_openai_durations(value: str, seconds: float) -> None:
    assert parse_duration(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", [None, "", "soon", "5", "1x", "s1", "1s junk"])
def test_not_a_duration(value: str | None) -> None:
    assert parse_duration(value) is None


def test_retry_after_seconds_and_milliseconds() -> None:
    assert rate_limited_for({"retry-after": "7"}, NOW) == 7.0
    assert rate_limited_for({"retry-after-ms": "2500"}, NOW) == 2.5


def test_nothing_usable_is_the_default_backoff() -> None:
    assert rate_limited_for({}, NOW) == DEFAULT_BACKOFF_S
    assert rate_limited_for({"retry-after": "soon"}, NOW) == DEFAULT_BACKOFF_S


def test_anthropic_exhausted_limit_resets_at_its_instant() -> None:
    headers = {
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": "2027-01-15T08:00:12Z",
        # Not exhausted: its reset does not count.
        "anthropic-ratelimit-input-tokens-remaining": "300",
        "anthropic-ratelimit-input-tokens-reset": "2027-01-15T08:00:50Z",
    }
    assert rate_limited_for(headers, NOW) == 12.0


def test_anthropic_reset_in_the_past_or_unreadable() -> None:
    past = {
        "anthropic-ratelimit-tokens-remaining": "0",
        "anthropic-ratelimit-tokens-reset": "2027-01-15T07:59:00Z",
    }
    assert rate_limited_for(past, NOW) == 0.0
    naive = {
        "anthropic-ratelimit-tokens-remaining": "0",
        "anthropic-ratelimit-tokens-reset": "2027-01-15T08:00:12",
    }
    assert rate_limited_for(naive, NOW) == DEFAULT_BACKOFF_S
    garbage = {**naive, "anthropic-ratelimit-tokens-reset": "tomorrow"}
    assert rate_limited_for(garbage, NOW) == DEFAULT_BACKOFF_S


def test_openai_exhausted_limits_take_the_longest_reset() -> None:
    headers = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1s",
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "6m0s",
        "retry-after": "2",
    }
    assert rate_limited_for(headers, NOW) == 360.0
    assert rate_limited_for({**headers, "x-ratelimit-remaining-tokens": "10"}, NOW) == 2.0


def test_the_fake_admits_n_per_window_and_says_when_to_retry() -> None:
    limit = ProviderRateLimit(requests=2, window_s=60)
    assert limit.admit(0.0) is None
    assert limit.admit(10.0) is None
    assert limit.admit(30.0) == 30.0  # the call at 0 leaves at 60
    assert limit.admit(60.0) is None
    assert limit.admit(65.0) == 5.0
    assert limit.most_in_any_window() == 2
    assert limit.refused_after(60.0) == 1
    assert retry_after_header(0.2) == "1" and retry_after_header(4.1) == "5"


def scripted_request(key: str) -> ModelRequest:
    """A request the fake answers with the script `key`."""
    return ModelRequest(
        model="claude-sonnet-4-6",
        system=fake.script_marker(key),
        messages=[Message(role="user", content="Hello")],
        tools=[],
        max_tokens=64,
    )


@pytest.fixture
async def server() -> AsyncIterator[FakeAnthropic]:
    async with start_fake_anthropic() as started:
        yield started


async def test_a_429_tells_how_long_the_limit_holds(server: FakeAnthropic) -> None:
    key = f"limits-{uuid.uuid4().hex[:8]}"
    server.script(key, [fake.text("one"), fake.text("two")])
    server.rate_limit = ProviderRateLimit(requests=1, window_s=60)
    provider = AnthropicProvider(api_key="test-key", base_url=server.base_url, timeout_s=5.0)
    request = scripted_request(key)
    try:
        await provider.complete(request)
        with pytest.raises(ModelCallError) as refused:
            await provider.complete(request)
    finally:
        await provider.aclose()
    assert refused.value.rate_limited_s is not None
    assert 50 <= refused.value.rate_limited_s <= 60
    assert refused.value.retry_after_s == refused.value.rate_limited_s
    assert len(server.rate_limit.refused) == 1


# What Anthropic sends with every successful answer (the values of a real response, the instants
# moved to NOW): four limits, each with its limit, remaining count and reset.
ANTHROPIC_ANSWER = {
    "request-id": "req_011CTz6dL4mBqV8xg5tGmCSB",
    "anthropic-ratelimit-requests-limit": "50",
    "anthropic-ratelimit-requests-remaining": "49",
    "anthropic-ratelimit-requests-reset": "2027-01-15T08:00:01Z",
    "anthropic-ratelimit-tokens-limit": "48000",
    "anthropic-ratelimit-tokens-remaining": "48000",
    "anthropic-ratelimit-tokens-reset": "2027-01-15T08:00:00Z",
    "anthropic-ratelimit-input-tokens-limit": "40000",
    "anthropic-ratelimit-input-tokens-remaining": "40000",
    "anthropic-ratelimit-input-tokens-reset": "2027-01-15T08:00:00Z",
    "anthropic-ratelimit-output-tokens-limit": "8000",
    "anthropic-ratelimit-output-tokens-remaining": "8000",
    "anthropic-ratelimit-output-tokens-reset": "2027-01-15T08:00:00Z",
}
# And OpenAI's (durations, not instants).
OPENAI_ANSWER = {
    "x-request-id": "req_8d6e3a1f0c2b4e5f9a7b6c5d4e3f2a1b",
    "x-ratelimit-limit-requests": "500",
    "x-ratelimit-remaining-requests": "499",
    "x-ratelimit-reset-requests": "120ms",
    "x-ratelimit-limit-tokens": "30000",
    "x-ratelimit-remaining-tokens": "29988",
    "x-ratelimit-reset-tokens": "24ms",
    "openai-processing-ms": "412",
}


def test_a_successful_answer_with_room_left_says_nothing() -> None:
    assert exhausted_for(ANTHROPIC_ANSWER, NOW) is None
    assert exhausted_for(OPENAI_ANSWER, NOW) is None
    assert exhausted_for({"request-id": "req_1"}, NOW) is None


def spent(headers: dict[str, str], limit: str, reset: str | None = None) -> dict[str, str]:
    """`headers` with Anthropic's `limit` (or OpenAI's) at 0 remaining, resetting at `reset`."""
    if "x-request-id" in headers:
        names = (f"x-ratelimit-remaining-{limit}", f"x-ratelimit-reset-{limit}")
    else:
        names = (f"anthropic-ratelimit-{limit}-remaining", f"anthropic-ratelimit-{limit}-reset")
    changed = {**headers, names[0]: "0"}
    return changed if reset is None else {**changed, names[1]: reset}


def test_a_successful_answer_that_spent_the_requests_holds_until_their_reset() -> None:
    answer = spent(ANTHROPIC_ANSWER, "requests", "2027-01-15T08:00:09Z")
    assert exhausted_for(answer, NOW) == 9.0


def test_a_successful_answer_that_spent_the_tokens_takes_the_longest_reset() -> None:
    answer = spent(ANTHROPIC_ANSWER, "output-tokens", "2027-01-15T08:00:30Z")
    assert exhausted_for(spent(answer, "requests"), NOW) == 30.0
    openai = spent(OPENAI_ANSWER, "tokens", "6m0s")
    assert exhausted_for(openai, NOW) == 360.0
    assert exhausted_for(spent(openai, "requests"), NOW) == 360.0


def test_a_spent_limit_with_an_unreadable_reset_waits_the_default() -> None:
    assert exhausted_for(spent(ANTHROPIC_ANSWER, "requests", "soon"), NOW) == DEFAULT_BACKOFF_S
    assert exhausted_for(spent(OPENAI_ANSWER, "requests", "1x"), NOW) == DEFAULT_BACKOFF_S


@pytest.mark.parametrize("stream", [False, True])
async def test_the_provider_reads_a_spent_limit_off_a_successful_answer(
    server: FakeAnthropic, stream: bool
) -> None:
    key = f"spent-{uuid.uuid4().hex[:8]}"
    reset = datetime.fromtimestamp(time.time() + 20, UTC).isoformat().replace("+00:00", "Z")
    answer = MessageReply(
        content=({"type": "text", "text": "last one"},),
        stop_reason="end_turn",
        headers=tuple(spent(ANTHROPIC_ANSWER, "requests", reset).items()),
    )
    server.script(key, [[fake.text("room left"), answer]])
    provider = AnthropicProvider(api_key="test-key", base_url=server.base_url, timeout_s=5.0)
    request = scripted_request(key)
    on_text = (lambda text: None) if stream else None
    try:
        first = await provider.complete(request, on_text)
        second = await provider.complete(request, on_text)
    finally:
        await provider.aclose()
    assert first.rate_limited_s is None
    assert second.rate_limited_s is not None
    assert 18 <= second.rate_limited_s <= 20
