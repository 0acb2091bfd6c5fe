"""Failures as a provider and as a gateway in front of it (LiteLLM's shapes) send them, through
the real SDKs over HTTP: a context overflow typed `LLMContextTooLong` in every shape, a relayed
retry hint honoured, a named endpoint's errors in its own name, a stream's error chunk kept."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from turnkeeper.activities.providers.anthropic_provider import AnthropicProvider
from turnkeeper.activities.providers.endpoints import Endpoint, endpoint_provider
from turnkeeper.activities.providers.error_reading import (
    retry_hint_s,
    says_context_overflow,
    says_upstream_overloaded,
    status_words,
)
from turnkeeper.activities.providers.openai_provider import OpenAICompatibleProvider
from turnkeeper.activities.providers.provider import ModelCallError, ModelProvider, ModelRequest
from turnkeeper.contracts.errors import (
    LLM_AUTH_ERROR,
    LLM_CONTEXT_TOO_LONG,
    LLM_INVALID_REQUEST,
    LLM_TRANSIENT,
)

from tests.fakes import fake_anthropic as anthropic_fake
from tests.fakes import openai_replies as openai_fake
from tests.fakes.anthropic_replies import RawReply
from tests.fakes.fake_anthropic import FakeAnthropic, start_fake_anthropic
from tests.fakes.fake_openai import FakeOpenAI
from tests.unit.activities.providers import openai_requests

# Anthropic's own wording of an overflow, in a 400 typed only `invalid_request_error`.
ANTHROPIC_OVERFLOW = "prompt is too long: 208310 tokens > 200000 maximum"
# LiteLLM relaying it: its exception class in the message, the status as `error.code`.
LITELLM_OVERFLOW = (
    "litellm.ContextWindowExceededError: litellm.BadRequestError: AnthropicException - "
    '{"type":"error","error":{"type":"invalid_request_error","message":"'
    + ANTHROPIC_OVERFLOW
    + '"}}'
)
LITELLM_OVERLOADED = (
    "litellm.InternalServerError: AnthropicException - "
    '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
)


@pytest.fixture
async def anthropic_server() -> AsyncIterator[FakeAnthropic]:
    async with start_fake_anthropic() as started:
        yield started


@pytest.fixture
async def gateway(openai_server: FakeOpenAI) -> AsyncIterator[OpenAICompatibleProvider]:
    provider = OpenAICompatibleProvider(
        "gateway",
        api_key="sk-gateway-secret",
        base_url=f"{openai_server.base_url}/v1",
        key_hint="GATEWAY_KEY",
        timeout_s=5.0,
    )
    yield provider
    await provider.aclose()


def anthropic_request(key: str) -> ModelRequest:
    return ModelRequest(
        model="claude-test-1",
        system=f"You are a test agent. {anthropic_fake.script_marker(key)}",
        messages=[{"role": "user", "content": "Hello"}],
        max_tokens=64,
    )


async def failure_of(provider: ModelProvider, request: ModelRequest) -> ModelCallError:
    with pytest.raises(ModelCallError) as caught:
        await provider.complete(request)
    return caught.value


# --- the readings themselves -------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        ANTHROPIC_OVERFLOW,
        LITELLM_OVERFLOW,
        "This model's maximum context length is 8192 tokens. However, you requested 9001.",
        "Error code: context_length_exceeded",
    ],
)
def test_every_documented_wording_of_an_overflow_is_read(message: str) -> None:
    assert says_context_overflow(message)
    assert says_context_overflow(message.upper())


@pytest.mark.parametrize("message", [None, "", "messages.0: field required", "max_tokens: 5 > 4"])
def test_other_messages_are_not_an_overflow(message: str | None) -> None:
    assert not says_context_overflow(message)


def test_an_upstream_overload_is_read_from_a_relayed_body() -> None:
    assert says_upstream_overloaded(LITELLM_OVERLOADED)
    assert not says_upstream_overloaded("Fake server error.")
    assert not says_upstream_overloaded(None)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after-ms": "1500", "retry-after": "9", "llm_provider-retry-after": "7"}, 1.5),
        ({"retry-after": "9", "llm_provider-retry-after": "7"}, 9.0),
        ({"llm_provider-retry-after-ms": "2500", "llm_provider-retry-after": "7"}, 2.5),
        ({"llm_provider-retry-after": "7"}, 7.0),
        ({"retry-after": "soon", "llm_provider-retry-after": "7"}, 7.0),
        ({"x-ratelimit-reset-requests": "7s"}, None),
        ({}, None),
    ],
)
def test_the_retry_hint_is_the_first_that_parses(
    headers: dict[str, str], seconds: float | None
) -> None:
    assert retry_hint_s(headers) == seconds


@pytest.mark.parametrize(
    ("names", "words"),
    [
        (("401", "auth_error"), "401 auth_error"),
        (("401", None), "401 with no error code"),
        ((None, "rate_limit_error"), "429 rate_limit_error"),
        (("rate_limit_exceeded", "requests"), "429 rate_limit_exceeded"),
    ],
)
def test_a_status_is_printed_once(names: tuple[str | None, str | None], words: str) -> None:
    status = int(words.split()[0])
    assert status_words(status, *names) == words


# --- Anthropic's own API -----------------------------------------------------------------------


async def test_anthropic_prompt_too_long_is_a_context_overflow(
    anthropic_server: FakeAnthropic,
) -> None:
    key = openai_requests.new_key()
    anthropic_server.script(
        key, [anthropic_fake.error(400, "invalid_request_error", ANTHROPIC_OVERFLOW)]
    )
    provider = AnthropicProvider(
        api_key="sk-test-secret", base_url=anthropic_server.base_url, timeout_s=5.0
    )

    error = await failure_of(provider, anthropic_request(key))
    await provider.aclose()

    assert (error.error_type, error.retryable) == (LLM_CONTEXT_TOO_LONG, False)
    assert "208310 tokens > 200000 maximum" in str(error)


async def test_a_named_anthropic_endpoint_speaks_in_its_own_name(
    anthropic_server: FakeAnthropic,
) -> None:
    key = openai_requests.new_key()
    anthropic_server.script(key, [anthropic_fake.error(401, "authentication_error", "bad key")])
    endpoint = Endpoint(kind="anthropic", base_url=anthropic_server.base_url, api_key_env="GW_KEY")
    provider = endpoint_provider("gateway", endpoint, {"GW_KEY": "sk-gw"})

    error = await failure_of(provider, anthropic_request(key))

    assert error.error_type == LLM_AUTH_ERROR
    assert str(error).startswith("gateway returned 401 authentication_error")
    assert "check GW_KEY" in str(error)
    assert "Anthropic" not in str(error) and "ANTHROPIC_API_KEY" not in str(error)


async def test_anthropic_shaped_gateway_relays_its_upstreams_retry_hint(
    anthropic_server: FakeAnthropic,
) -> None:
    key = openai_requests.new_key()
    relayed = {"llm_provider-retry-after": "7"}
    anthropic_server.script(
        key, [anthropic_fake.error(429, "rate_limit_error", "slow down", headers=relayed)]
    )
    provider = AnthropicProvider(
        api_key="sk-test-secret", base_url=anthropic_server.base_url, timeout_s=5.0
    )

    error = await failure_of(provider, anthropic_request(key))
    await provider.aclose()

    assert error.retryable and error.retry_after_s == 7.0


# --- an OpenAI-compatible gateway (LiteLLM's shapes) -------------------------------------------


async def test_gateway_context_window_error_is_a_context_overflow(
    openai_server: FakeOpenAI, gateway: OpenAICompatibleProvider
) -> None:
    key = openai_requests.new_key()
    openai_server.script(key, [openai_fake.chat_error(400, None, "400", LITELLM_OVERFLOW)])

    error = await failure_of(gateway, openai_requests.request_for(key))

    assert (error.error_type, error.retryable) == (LLM_CONTEXT_TOO_LONG, False)
    assert str(error).startswith("gateway returned 400 with no error code")


async def test_gateway_bad_request_that_is_no_overflow_stays_invalid(
    openai_server: FakeOpenAI, gateway: OpenAICompatibleProvider
) -> None:
    key = openai_requests.new_key()
    message = "litellm.BadRequestError: tools.0.name: String should match pattern"
    openai_server.script(key, [openai_fake.chat_error(400, None, "400", message)])

    error = await failure_of(gateway, openai_requests.request_for(key))

    assert error.error_type == LLM_INVALID_REQUEST


async def test_gateway_status_in_the_code_is_not_printed_twice(
    openai_server: FakeOpenAI, gateway: OpenAICompatibleProvider
) -> None:
    key = openai_requests.new_key()
    openai_server.script(key, [openai_fake.chat_error(401, "auth_error", "401", "bad key")])

    error = await failure_of(gateway, openai_requests.request_for(key))

    assert str(error).startswith("gateway returned 401 auth_error")
    assert "401 401" not in str(error) and "check GATEWAY_KEY" in str(error)


async def test_gateway_relayed_retry_hint_is_honoured(
    openai_server: FakeOpenAI, gateway: OpenAICompatibleProvider
) -> None:
    key = openai_requests.new_key()
    relayed = {"llm_provider-retry-after": "7"}
    openai_server.script(
        key, [openai_fake.chat_error(429, "throttling_error", "429", "slow down", headers=relayed)]
    )

    error = await failure_of(gateway, openai_requests.request_for(key))

    assert (error.error_type, error.retry_after_s) == (LLM_TRANSIENT, 7.0)
    assert "retry after 7 s" in str(error)


async def test_gateway_relayed_overload_says_so(
    openai_server: FakeOpenAI, gateway: OpenAICompatibleProvider
) -> None:
    key = openai_requests.new_key()
    openai_server.script(key, [openai_fake.chat_error(500, None, "500", LITELLM_OVERLOADED)])

    error = await failure_of(gateway, openai_requests.request_for(key))

    assert (error.error_type, error.retryable) == (LLM_TRANSIENT, True)
    assert "upstream model is overloaded" in str(error)


def error_chunk_stream(error: dict[str, object]) -> RawReply:
    """A stream that began (two text deltas) and then relays an upstream error as a chunk."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    deltas = [
        base | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "an "}}]},
        base | {"choices": [{"index": 0, "delta": {"content": "answ"}}]},
        {"error": error},
    ]
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in deltas)
    return RawReply(200, body.encode(), content_type="text/event-stream")


@pytest.mark.parametrize(
    ("error", "error_type", "needle"),
    [
        ({"message": "upstream overloaded", "code": "529"}, LLM_TRANSIENT, "upstream overloaded"),
        ({"message": LITELLM_OVERFLOW, "code": "400"}, LLM_CONTEXT_TOO_LONG, "ContextWindow"),
    ],
)
async def test_an_error_chunk_mid_stream_keeps_its_message(
    openai_server: FakeOpenAI,
    gateway: OpenAICompatibleProvider,
    error: dict[str, object],
    error_type: str,
    needle: str,
) -> None:
    key = openai_requests.new_key()
    openai_server.script(key, [error_chunk_stream(error)])
    deltas: list[str] = []

    with pytest.raises(ModelCallError) as caught:
        await gateway.complete(openai_requests.request_for(key), deltas.append)

    assert deltas == ["an ", "answ"]
    assert caught.value.error_type == error_type
    assert needle in str(caught.value)
    assert "failed with APIError" not in str(caught.value)
