"""`OpenAICompatibleProvider` through the real `openai` SDK, over HTTP, against the fake Chat
Completions server (in-process)."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import AsyncIterator

import pytest
from turnkeeper.activities.providers.openai_provider import OpenAICompatibleProvider
from turnkeeper.activities.providers.provider import ModelCallError
from turnkeeper.contracts.errors import (
    LLM_AUTH_ERROR,
    LLM_CONTENT_FILTERED,
    LLM_CONTEXT_TOO_LONG,
    LLM_INVALID_REQUEST,
    LLM_TRANSIENT,
)
from turnkeeper.contracts.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock

from tests.fakes import openai_replies as fake
from tests.fakes.anthropic_replies import RawReply, SlowReply
from tests.fakes.fake_openai import FakeOpenAI
from tests.unit.activities.providers.openai_requests import READ, new_key, request_for


@pytest.fixture
async def provider(openai_server: FakeOpenAI) -> AsyncIterator[OpenAICompatibleProvider]:
    provider = OpenAICompatibleProvider(
        api_key="sk-test-secret", base_url=f"{openai_server.base_url}/v1", timeout_s=5.0
    )
    yield provider
    await provider.aclose()


async def test_parallel_tool_calls_and_results_round_trip(
    openai_server: FakeOpenAI, provider: OpenAICompatibleProvider
) -> None:
    key = new_key()
    openai_server.script(
        key,
        [
            fake.tool_calls(
                ("read_file", {"path": "a.md"}), ("read_file", {"path": "b.md"}), text="Reading."
            ),
            fake.text("Both read."),
        ],
    )
    first = await provider.complete(request_for(key))

    assert first.stop_reason == "tool_use"
    text, *uses = first.content
    assert text == TextBlock(text="Reading.")
    assert [(u.name, u.input) for u in uses if isinstance(u, ToolUseBlock)] == [
        ("read_file", {"path": "a.md"}),
        ("read_file", {"path": "b.md"}),
    ]
    results = Message(
        role="user",
        content=[
            ToolResultBlock(tool_use_id=uses[0].id, content="A"),
            ToolResultBlock(tool_use_id=uses[1].id, content="no such file", is_error=True),
        ],
    )
    conversation = [*request_for(key).messages, Message(role="assistant", content=first.content)]
    second = await provider.complete(request_for(key, [*conversation, results]))

    assert second.content == [TextBlock(text="Both read.")]
    assert second.stop_reason == "end_turn"
    sent = openai_server.requests_for(key)[-1].body
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool", "tool"]
    assert sent["messages"][2]["tool_calls"][1]["function"] == {
        "name": "read_file",
        "arguments": json.dumps({"path": "b.md"}),
    }
    assert sent["messages"][4] == {
        "role": "tool",
        "tool_call_id": uses[1].id,
        "content": "[tool error] no such file",
    }
    assert sent["tools"][0]["function"]["parameters"] == READ.input_schema
    assert sent["max_completion_tokens"] == 256
    assert openai_server.requests_for(key)[-1].headers["authorization"] == "Bearer sk-test-secret"


async def test_streaming_passes_deltas_and_returns_the_same_answer(
    openai_server: FakeOpenAI, provider: OpenAICompatibleProvider
) -> None:
    key = new_key()
    answer = "A streamed answer, in several pieces."
    openai_server.script(
        key,
        [
            [
                fake.tool_calls(("read_file", {"path": "a.md"}), text="Let me read it."),
                fake.tool_calls(("read_file", {"path": "a.md"}), text="Let me read it."),
            ]
        ],
    )
    plain = await provider.complete(request_for(key))
    pieces: list[str] = []
    streamed = await provider.complete(request_for(key), pieces.append)

    assert streamed.content == plain.content and streamed.usage == plain.usage
    assert "".join(pieces) == "Let me read it." and len(pieces) > 1
    assert openai_server.requests_for(key)[-1].body["stream_options"] == {"include_usage": True}

    openai_server.script(key, [fake.text(answer, cached_tokens=3)])
    pieces.clear()
    final = await provider.complete(request_for(key), pieces.append)
    assert "".join(pieces) == answer
    assert final.usage.cache_read_tokens == 3


async def test_cached_tokens_are_counted_apart_from_input(
    openai_server: FakeOpenAI, provider: OpenAICompatibleProvider
) -> None:
    key = new_key()
    openai_server.script(key, [fake.text("ok", cached_tokens=10)])

    response = await provider.complete(request_for(key))

    body = openai_server.requests_for(key)[0].body
    prompt = max(1, len(json.dumps(body["messages"])) // 4)
    assert response.usage.cache_read_tokens == 10
    assert response.usage.input_tokens == prompt - 10


@pytest.mark.parametrize(
    ("reply", "error_type", "needle"),
    [
        (fake.chat_error(400, "invalid_request_error", None, "bad field"), LLM_INVALID_REQUEST, ""),
        (fake.chat_error(401, "invalid_request_error", "invalid_api_key"), LLM_AUTH_ERROR, ""),
        (fake.chat_error(403, "permission_error", None), LLM_AUTH_ERROR, ""),
        (fake.chat_error(404, "invalid_request_error", "model_not_found"), LLM_INVALID_REQUEST, ""),
        (fake.chat_error(422, "invalid_request_error", None), LLM_INVALID_REQUEST, ""),
        (fake.context_length_exceeded(), LLM_CONTEXT_TOO_LONG, "8192"),
        (fake.chat_error(429, "insufficient_quota", "insufficient_quota"), LLM_AUTH_ERROR, ""),
        (fake.content_filtered(), LLM_CONTENT_FILTERED, "declined"),
        (fake.ChatReply("x", finish_reason="tool_call_mystery"), LLM_INVALID_REQUEST, "mystery"),
    ],
)
async def test_refusals_are_typed_and_not_retryable(
    openai_server: FakeOpenAI,
    provider: OpenAICompatibleProvider,
    reply: fake.Reply,
    error_type: str,
    needle: str,
) -> None:
    key = new_key()
    openai_server.script(key, [reply])

    with pytest.raises(ModelCallError) as raised:
        await provider.complete(request_for(key))

    assert (raised.value.error_type, raised.value.retryable) == (error_type, False)
    assert needle in str(raised.value)
    assert "sk-test-secret" not in str(raised.value)


@pytest.mark.parametrize(
    "reply",
    [
        fake.server_error(500),
        fake.server_error(502),
        fake.server_error(503),
        fake.chat_error(504, "server_error"),
        fake.chat_error(408, "timeout"),
        RawReply(200, b'{"id": "chatcmpl-cut", "obj'),
        RawReply(200, b'{"id": "x", "object": "chat.completion", "choices": []}'),
        fake.malformed_arguments("read_file"),
    ],
    ids=["500", "502", "503", "504", "408", "invalid-json", "no-choices", "bad-arguments"],
)
async def test_transient_failures_are_retryable(
    openai_server: FakeOpenAI, provider: OpenAICompatibleProvider, reply: fake.Reply
) -> None:
    key = new_key()
    openai_server.script(key, [reply])

    with pytest.raises(ModelCallError) as raised:
        await provider.complete(request_for(key))

    assert (raised.value.error_type, raised.value.retryable) == (LLM_TRANSIENT, True)


async def test_rate_limit_carries_retry_after(
    openai_server: FakeOpenAI, provider: OpenAICompatibleProvider
) -> None:
    key = new_key()
    openai_server.script(key, [fake.rate_limited(retry_after=7)])

    with pytest.raises(ModelCallError) as raised:
        await provider.complete(request_for(key))

    assert raised.value.retryable and raised.value.retry_after_s == 7
    assert "429" in str(raised.value) and "rate_limit_exceeded" in str(raised.value)


async def test_timeout_and_refused_connection_are_transient(openai_server: FakeOpenAI) -> None:
    key = new_key()
    openai_server.script(key, [SlowReply(fake.text("late"), 3)])
    slow = OpenAICompatibleProvider(
        api_key="k", base_url=f"{openai_server.base_url}/v1", timeout_s=0.5
    )
    with pytest.raises(ModelCallError) as raised:
        await slow.complete(request_for(key))
    assert raised.value.retryable and "0.5 s" in str(raised.value)

    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    dead = OpenAICompatibleProvider(api_key="k", base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ModelCallError) as raised:
        await dead.complete(request_for(key))
    assert raised.value.retryable and f"127.0.0.1:{port}" in str(raised.value)


async def test_missing_key_is_an_auth_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider = OpenAICompatibleProvider(base_url="http://127.0.0.1:9/v1")

    with pytest.raises(ModelCallError) as raised:
        await provider.complete(request_for(new_key()))

    assert raised.value.error_type == LLM_AUTH_ERROR and not raised.value.retryable
    assert "OPENAI_API_KEY" in str(raised.value)


async def test_without_the_openai_extra_the_call_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A worker installed without the openai extra: importing the SDK fails.
    monkeypatch.setitem(sys.modules, "openai", None)
    provider = OpenAICompatibleProvider(api_key="k", base_url="http://127.0.0.1:9/v1")

    with pytest.raises(ModelCallError) as raised:
        await provider.complete(request_for(new_key()))

    assert raised.value.error_type == LLM_INVALID_REQUEST and not raised.value.retryable
    assert "pip install -e '.[openai]'" in str(raised.value)
