"""`AnthropicProvider` through the real `anthropic` SDK, over HTTP, against the fake API."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import anthropic
import httpx2
import pytest
from turnkeeper.activities.providers.anthropic_provider import (
    AnthropicProvider,
    _to_sdk_messages,
    classify_error,
)
from turnkeeper.activities.providers.provider import (
    ModelCallError,
    ModelRequest,
    parse_retry_after,
)
from turnkeeper.contracts.errors import (
    LLM_AUTH_ERROR,
    LLM_CONTENT_FILTERED,
    LLM_CONTEXT_TOO_LONG,
    LLM_INVALID_REQUEST,
    LLM_TRANSIENT,
)
from turnkeeper.contracts.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from turnkeeper.contracts.tools import ToolDefinition
from turnkeeper.contracts.turn import Usage

from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic, ReceivedRequest, start_fake_anthropic

MODEL = "claude-test-1"


@pytest.fixture
async def server() -> AsyncIterator[FakeAnthropic]:
    async with start_fake_anthropic() as started:
        yield started


@pytest.fixture
async def provider(server: FakeAnthropic) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider(api_key="test-key", base_url=server.base_url, timeout_s=5.0)
    yield provider
    await provider.aclose()


def new_key() -> str:
    return f"provider-{uuid.uuid4().hex[:8]}"


def request_for(
    key: str | None,
    messages: list[Message] | None = None,
    *,
    tools: list[ToolDefinition] | None = None,
    max_tokens: int = 256,
) -> ModelRequest:
    return ModelRequest(
        model=MODEL,
        system=f"You are a test agent. {fake.script_marker(key)}" if key else "",
        messages=messages or [Message(role="user", content="Hello")],
        tools=tools or [],
        max_tokens=max_tokens,
    )


async def failure_of(provider: AnthropicProvider, request: ModelRequest) -> ModelCallError:
    with pytest.raises(ModelCallError) as caught:
        await provider.complete(request)
    return caught.value


def sent_key(received: ReceivedRequest) -> str:
    # SDK 2.x sends the API key as a bearer token; older ones sent `x-api-key`.
    bearer = received.headers.get("authorization", "").removeprefix("Bearer ")
    return received.headers.get("x-api-key", bearer)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_text_reply(server: FakeAnthropic, provider: AnthropicProvider) -> None:
    key = new_key()
    server.script(key, [fake.text("Hello there.")])

    response = await provider.complete(request_for(key))

    assert response.content == [TextBlock(text="Hello there.")]
    assert response.stop_reason == "end_turn"
    assert response.model == MODEL


async def test_tool_use_round_trips(server: FakeAnthropic, provider: AnthropicProvider) -> None:
    key = new_key()
    calls = [("read_file", {"path": "a.md"}), ("list_files", {"path": "."})]
    server.script(key, [fake.tool_calls(*calls, text="Let me look."), fake.text("Done.")])
    question = Message(role="user", content="Summarise a.md")

    first = await provider.complete(request_for(key, [question]))

    assert first.stop_reason == "tool_use"
    assert first.content == [
        TextBlock(text="Let me look."),
        ToolUseBlock(id=f"toolu_{key.replace('-', '_')}_0_0", name="read_file", input=calls[0][1]),
        ToolUseBlock(id=f"toolu_{key.replace('-', '_')}_0_1", name="list_files", input=calls[1][1]),
    ]
    uses = [block for block in first.content if isinstance(block, ToolUseBlock)]
    results = Message(
        role="user",
        content=[
            ToolResultBlock(tool_use_id=uses[0].id, content="# A"),
            ToolResultBlock(
                tool_use_id=uses[1].id, content=[TextBlock(text="a.md")], is_error=True
            ),
        ],
    )
    assistant = Message(role="assistant", content=first.content)

    second = await provider.complete(request_for(key, [question, assistant, results]))

    assert second.content == [TextBlock(text="Done.")]
    sent = server.requests_for(key)[1].body["messages"]
    assert sent[1] == assistant.model_dump(mode="json")
    assert sent[2]["content"] == [
        {"type": "tool_result", "tool_use_id": uses[0].id, "content": "# A", "is_error": False},
        {
            "type": "tool_result",
            "tool_use_id": uses[1].id,
            "content": [{"type": "text", "text": "a.md"}],
            "is_error": True,
        },
    ]


async def test_usage_is_mapped(server: FakeAnthropic, provider: AnthropicProvider) -> None:
    key = new_key()
    usage = {
        "input_tokens": 11,
        "output_tokens": 7,
        "cache_read_input_tokens": 5,
        "cache_creation_input_tokens": 3,
    }
    server.script(key, [fake.text("hi", usage=usage)])

    response = await provider.complete(request_for(key))

    assert response.usage == Usage(
        input_tokens=11, output_tokens=7, cache_read_tokens=5, cache_write_tokens=3
    )


async def test_default_usage_counts_characters(
    server: FakeAnthropic, provider: AnthropicProvider
) -> None:
    key = new_key()
    server.script(key, [fake.text("x" * 40)])
    request = request_for(key, [Message(role="user", content="y" * 400)])

    response = await provider.complete(request)

    assert response.usage == Usage(input_tokens=(len(request.system) + 400) // 4, output_tokens=10)


async def test_null_usage_fields_become_zero(
    server: FakeAnthropic, provider: AnthropicProvider
) -> None:
    key = new_key()
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-reported",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "text", "text": "one"},
            {"type": "tool_use", "id": "toolu_1", "name": "list_files", "input": {}},
            {"type": "text", "text": "two"},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 3,
            "output_tokens": 4,
            "cache_creation_input_tokens": None,
            "cache_read_input_tokens": None,
        },
    }
    server.script(key, [fake.RawReply(200, json.dumps(body).encode())])

    response = await provider.complete(request_for(key))

    assert response.usage == Usage(input_tokens=3, output_tokens=4)
    assert response.model == "claude-reported"
    assert [block.type for block in response.content] == ["text", "tool_use", "text"]


@pytest.mark.parametrize(
    "body",
    [
        b"{}",
        b"[1]",
        b'"text"',
        b'{"content": "x", "stop_reason": "end_turn", "model": "m", "usage": {}}',
        b'{"content": [{"type": "tool_use", "id": "t", "name": "n", "input": [1]}],'
        b' "stop_reason": "tool_use", "model": "m",'
        b' "usage": {"input_tokens": 1, "output_tokens": 1}}',
    ],
)
async def test_json_of_the_wrong_shape_is_transient(
    server: FakeAnthropic, provider: AnthropicProvider, body: bytes
) -> None:
    key = new_key()
    server.script(key, [fake.RawReply(200, body)])

    error = await failure_of(provider, request_for(key))

    assert (error.error_type, error.retryable) == (LLM_TRANSIENT, True)
    assert "not a Messages API response" in str(error)


async def test_request_shape(server: FakeAnthropic, provider: AnthropicProvider) -> None:
    key = new_key()
    server.script(key, [fake.text("ok")])
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    tools = [
        ToolDefinition(name="read_file", description="Read a file", input_schema=schema),
        ToolDefinition(name="ping"),
    ]

    await provider.complete(request_for(key, tools=tools, max_tokens=321))

    (received,) = server.requests_for(key)
    assert received.body["model"] == MODEL
    assert received.body["max_tokens"] == 321
    assert received.body["system"] == request_for(key).system
    assert received.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Hello"}]}
    ]
    assert received.body["tools"] == [
        {"name": "read_file", "description": "Read a file", "input_schema": schema},
        {"name": "ping", "input_schema": {"type": "object"}},
    ]
    assert sent_key(received) == "test-key"


async def test_empty_system_and_tools_are_omitted(
    server: FakeAnthropic, provider: AnthropicProvider
) -> None:
    # Without a system prompt there is no script marker, so the fake refuses: fine, this test
    # only reads what was sent.
    error = await failure_of(provider, request_for(None))

    assert error.error_type == LLM_INVALID_REQUEST
    (received,) = server.requests
    assert "system" not in received.body
    assert "tools" not in received.body


async def test_large_max_tokens_is_sent_without_streaming(
    server: FakeAnthropic, provider: AnthropicProvider
) -> None:
    # With its default timeout the SDK refuses such a non-streaming call before any HTTP.
    key = new_key()
    server.script(key, [fake.text("ok")])

    await provider.complete(request_for(key, max_tokens=128_000))

    assert server.requests_for(key)[0].body["max_tokens"] == 128_000


@pytest.mark.parametrize(
    ("reply", "status", "error_type", "expected"),
    [
        (fake.overloaded(), 529, "overloaded_error", LLM_TRANSIENT),
        (fake.server_error(500), 500, "api_error", LLM_TRANSIENT),
        (fake.server_error(502), 502, "api_error", LLM_TRANSIENT),
        (fake.server_error(503), 503, "api_error", LLM_TRANSIENT),
        (fake.server_error(504), 504, "timeout_error", LLM_TRANSIENT),
        (fake.rate_limited(), 429, "rate_limit_error", LLM_TRANSIENT),
        (
            fake.error(400, "invalid_request_error"),
            400,
            "invalid_request_error",
            LLM_INVALID_REQUEST,
        ),
        (fake.error(401, "authentication_error"), 401, "authentication_error", LLM_AUTH_ERROR),
        (fake.error(403, "permission_error"), 403, "permission_error", LLM_AUTH_ERROR),
        (fake.error(404, "not_found_error"), 404, "not_found_error", LLM_INVALID_REQUEST),
        (fake.error(413, "request_too_large"), 413, "request_too_large", LLM_CONTEXT_TOO_LONG),
        (
            fake.error(422, "invalid_request_error"),
            422,
            "invalid_request_error",
            LLM_INVALID_REQUEST,
        ),
    ],
)
async def test_status_errors_are_classified(
    server: FakeAnthropic,
    provider: AnthropicProvider,
    reply: fake.Reply,
    status: int,
    error_type: str,
    expected: str,
) -> None:
    key = new_key()
    server.script(key, [reply])

    error = await failure_of(provider, request_for(key))

    assert error.error_type == expected
    assert error.retryable is (expected == LLM_TRANSIENT)
    assert f"Anthropic returned {status} {error_type} for model {MODEL!r}" in str(error)
    assert "(request req_fake_" in str(error)
    assert len(server.requests_for(key)) == 1, "the SDK must not retry on its own"


async def test_message_quotes_the_api(server: FakeAnthropic, provider: AnthropicProvider) -> None:
    key = new_key()
    api_says = "messages.0.content: field required"
    server.script(key, [fake.error(400, "invalid_request_error", api_says)])

    error = await failure_of(provider, request_for(key))

    assert error.error_type == LLM_INVALID_REQUEST
    assert re.fullmatch(
        rf"Anthropic returned 400 invalid_request_error for model '{MODEL}' "
        rf"\(request req_fake_\d+\): {api_says}\.",
        str(error),
    )


async def test_rate_limit_carries_retry_after(
    server: FakeAnthropic, provider: AnthropicProvider
) -> None:
    key = new_key()
    server.script(key, [fake.rate_limited(retry_after=7)])

    error = await failure_of(provider, request_for(key))

    assert (error.error_type, error.retryable, error.retry_after_s) == (LLM_TRANSIENT, True, 7.0)
    assert str(error).endswith("; retry after 7 s.")
    assert len(server.requests_for(key)) == 1


async def test_rate_limit_with_garbage_retry_after(
    server: FakeAnthropic, provider: AnthropicProvider
) -> None:
    key = new_key()
    server.script(key, [fake.rate_limited(retry_after="soon")])

    error = await failure_of(provider, request_for(key))

    assert (error.error_type, error.retry_after_s) == (LLM_TRANSIENT, None)


async def test_invalid_json_200_is_transient(
    server: FakeAnthropic, provider: AnthropicProvider
) -> None:
    key = new_key()
    server.script(key, [fake.invalid_json()])

    error = await failure_of(provider, request_for(key))

    assert (error.error_type, error.retryable) == (LLM_TRANSIENT, True)
    # The installed SDK raises a bare json.JSONDecodeError for this, not an APIError; its
    # position is in the message, and the exception itself (which holds the body) is not kept.
    assert "not valid JSON (line 1 column" in str(error)
    assert (error.__cause__, error.__context__) == (None, None)
    assert len(server.requests_for(key)) == 1


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (fake.refusal(), LLM_CONTENT_FILTERED),
        (fake.context_window_exceeded(), LLM_CONTEXT_TOO_LONG),
    ],
)
async def test_failures_reported_as_stop_reasons(
    server: FakeAnthropic, provider: AnthropicProvider, reply: fake.Reply, expected: str
) -> None:
    key = new_key()
    server.script(key, [reply])

    error = await failure_of(provider, request_for(key))

    assert (error.error_type, error.retryable) == (expected, False)
    assert "(stop_reason " in str(error)
    assert "request req_fake_" in str(error)


async def test_unknown_stop_reason_is_not_retried(
    server: FakeAnthropic, provider: AnthropicProvider
) -> None:
    key = new_key()
    server.script(key, [fake.text("?", stop_reason="daydreaming")])

    error = await failure_of(provider, request_for(key))

    assert (error.error_type, error.retryable) == (LLM_INVALID_REQUEST, False)
    assert "'daydreaming'" in str(error)


async def test_connection_refused_is_transient() -> None:
    port = closed_port()
    provider = AnthropicProvider(api_key="test-key", base_url=f"http://127.0.0.1:{port}")

    error = await failure_of(provider, request_for(new_key()))

    assert (error.error_type, error.retryable) == (LLM_TRANSIENT, True)
    assert f"Could not reach Anthropic at http://127.0.0.1:{port}" in str(error)


async def test_timeout_is_transient(server: FakeAnthropic) -> None:
    key = new_key()
    server.script(key, [fake.slow(fake.text("late"), delay_s=5.0)])
    provider = AnthropicProvider(api_key="test-key", base_url=server.base_url, timeout_s=0.2)

    error = await failure_of(provider, request_for(key))

    assert (error.error_type, error.retryable) == (LLM_TRANSIENT, True)
    assert "did not answer within 0.2 s" in str(error)
    assert len(server.requests_for(key)) == 1


async def test_cancellation_propagates(server: FakeAnthropic, provider: AnthropicProvider) -> None:
    key = new_key()
    server.script(key, [fake.slow(fake.text("late"), delay_s=5.0)])
    call = asyncio.create_task(provider.complete(request_for(key)))
    await server.wait_for_requests(key)

    call.cancel()

    with pytest.raises(asyncio.CancelledError):
        await call


async def test_missing_key_fails_on_use_not_construction(
    server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path))  # no profile on disk either
    provider = AnthropicProvider(base_url=server.base_url)

    error = await failure_of(provider, request_for(new_key()))

    assert (error.error_type, error.retryable) == (LLM_AUTH_ERROR, False)
    assert "ANTHROPIC_API_KEY" in str(error)
    assert server.requests == []


async def test_environment_is_honoured_and_key_never_shown(
    server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-ant-secret-value"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    key = new_key()
    server.script(key, [fake.error(401, "authentication_error", f"bad key {secret}")])

    error = await failure_of(AnthropicProvider(), request_for(key))

    assert sent_key(server.requests_for(key)[0]) == secret
    assert error.error_type == LLM_AUTH_ERROR
    assert secret not in str(error)
    assert "bad key [redacted]" in str(error)


def test_retry_after_parsing() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)

    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("1.5") == 1.5
    assert parse_retry_after(later, now=now.timestamp()) == 30.0
    assert parse_retry_after(format_datetime(now, usegmt=True), now=now.timestamp() + 9) == 0.0
    for garbage in (None, "", "soon", "-3", "nan", "inf", "Mon, 99 Foo 2026"):
        assert parse_retry_after(garbage) is None, garbage


def test_classification_without_http() -> None:
    request = httpx2.Request("POST", "https://api.example/v1/messages")
    decode = json.JSONDecodeError("Expecting value", "<html>", 0)

    assert classify_error(decode).error_type == LLM_TRANSIENT
    assert classify_error(anthropic.APITimeoutError(request), timeout_s=3).retryable
    assert classify_error(anthropic.CredentialsError("no file")).error_type == LLM_AUTH_ERROR
    for status, expected in [(408, LLM_TRANSIENT), (409, LLM_INVALID_REQUEST)]:
        response = httpx2.Response(status, request=request)
        error = anthropic.APIStatusError("x", response=response, body=None)
        assert classify_error(error).error_type == expected, status


def test_messages_convert_to_api_shape() -> None:
    messages = [
        Message(role="user", content="hi"),
        Message(role="assistant", content=[ToolUseBlock(id="t1", name="ping", input={"n": 1})]),
        Message(role="user", content=[ToolResultBlock(tool_use_id="t1", content="pong")]),
    ]

    assert _to_sdk_messages(messages) == [m.model_dump(mode="json") for m in messages]


async def test_streaming_passes_text_as_it_arrives_and_returns_the_same_answer(
    server: FakeAnthropic, provider: AnthropicProvider
) -> None:
    key = new_key()
    usage = {"input_tokens": 12, "output_tokens": 9}
    server.script(
        key, [fake.tool_calls(("read_file", {"path": "a.md"}), text="Let me look.", usage=usage)]
    )
    pieces: list[str] = []

    response = await provider.complete(request_for(key), on_text=pieces.append)

    assert "".join(pieces) == "Let me look." and len(pieces) > 1
    assert response.content[0] == TextBlock(text="Let me look.")
    assert response.content[1].type == "tool_use" and response.content[1].input == {"path": "a.md"}
    assert (response.stop_reason, response.usage.input_tokens, response.usage.output_tokens) == (
        "tool_use",
        12,
        9,
    )
    assert server.requests_for(key)[0].body["stream"] is True
