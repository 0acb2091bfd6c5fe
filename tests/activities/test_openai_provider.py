"""`OpenAICompatibleProvider` through the real `openai` SDK, over HTTP, against the fake Chat
Completions server; and the named endpoints of `TURNKEEPER_PROVIDERS`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from turnkeeper.activities.providers.endpoints import (
    NO_KEY,
    ProvidersConfigError,
    default_providers,
    named_endpoints,
)
from turnkeeper.activities.providers.openai_provider import OpenAICompatibleProvider
from turnkeeper.activities.providers.provider import ModelCallError, ModelRequest
from turnkeeper.contracts.errors import (
    LLM_AUTH_ERROR,
    LLM_CONTENT_FILTERED,
    LLM_CONTEXT_TOO_LONG,
    LLM_INVALID_REQUEST,
    LLM_TRANSIENT,
)
from turnkeeper.contracts.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from turnkeeper.contracts.tools import ToolDefinition

from turnkeeper.testing import fake_anthropic as anthropic_fake
from turnkeeper.testing import openai_replies as fake
from turnkeeper.testing.anthropic_replies import RawReply, SlowReply
from turnkeeper.testing.fake_anthropic import start_fake_anthropic
from turnkeeper.testing.fake_openai import FakeOpenAI, start_fake_openai

MODEL = "gpt-test-1"
READ = ToolDefinition(
    name="read_file",
    description="Read a file",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAI]:
    async with start_fake_openai() as started:
        yield started


@pytest.fixture
async def provider(server: FakeOpenAI) -> AsyncIterator[OpenAICompatibleProvider]:
    provider = OpenAICompatibleProvider(
        api_key="sk-test-secret", base_url=f"{server.base_url}/v1", timeout_s=5.0
    )
    yield provider
    await provider.aclose()


def request_for(key: str, messages: list[Message] | None = None) -> ModelRequest:
    return ModelRequest(
        model=MODEL,
        system=f"You are a test. [script:{key}]",
        messages=messages or [Message(role="user", content="Read a.md and b.md")],
        tools=[READ],
        max_tokens=256,
    )


def new_key() -> str:
    return f"oa-{uuid.uuid4().hex[:8]}"


async def test_parallel_tool_calls_and_results_round_trip(
    server: FakeOpenAI, provider: OpenAICompatibleProvider
) -> None:
    key = new_key()
    server.script(
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
    sent = server.requests_for(key)[-1].body
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
    assert server.requests_for(key)[-1].headers["authorization"] == "Bearer sk-test-secret"


async def test_streaming_passes_deltas_and_returns_the_same_answer(
    server: FakeOpenAI, provider: OpenAICompatibleProvider
) -> None:
    key = new_key()
    answer = "A streamed answer, in several pieces."
    server.script(
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
    assert server.requests_for(key)[-1].body["stream_options"] == {"include_usage": True}

    server.script(key, [fake.text(answer, cached_tokens=3)])
    pieces.clear()
    final = await provider.complete(request_for(key), pieces.append)
    assert "".join(pieces) == answer
    assert final.usage.cache_read_tokens == 3


async def test_cached_tokens_are_counted_apart_from_input(
    server: FakeOpenAI, provider: OpenAICompatibleProvider
) -> None:
    key = new_key()
    server.script(key, [fake.text("ok", cached_tokens=10)])

    response = await provider.complete(request_for(key))

    body = server.requests_for(key)[0].body
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
    server: FakeOpenAI,
    provider: OpenAICompatibleProvider,
    reply: fake.Reply,
    error_type: str,
    needle: str,
) -> None:
    key = new_key()
    server.script(key, [reply])

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
    server: FakeOpenAI, provider: OpenAICompatibleProvider, reply: fake.Reply
) -> None:
    key = new_key()
    server.script(key, [reply])

    with pytest.raises(ModelCallError) as raised:
        await provider.complete(request_for(key))

    assert (raised.value.error_type, raised.value.retryable) == (LLM_TRANSIENT, True)


async def test_rate_limit_carries_retry_after(
    server: FakeOpenAI, provider: OpenAICompatibleProvider
) -> None:
    key = new_key()
    server.script(key, [fake.rate_limited(retry_after=7)])

    with pytest.raises(ModelCallError) as raised:
        await provider.complete(request_for(key))

    assert raised.value.retryable and raised.value.retry_after_s == 7
    assert "429" in str(raised.value) and "rate_limit_exceeded" in str(raised.value)


async def test_timeout_and_refused_connection_are_transient(server: FakeOpenAI) -> None:
    key = new_key()
    server.script(key, [SlowReply(fake.text("late"), 3)])
    slow = OpenAICompatibleProvider(api_key="k", base_url=f"{server.base_url}/v1", timeout_s=0.5)
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


async def test_a_named_endpoint_sends_its_own_key_and_max_tokens(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-must-not-leak")
    config = {
        "local": {"kind": "openai", "base_url": f"{server.base_url}/v1", "api_key_env": "LK"},
        "open": {"kind": "openai", "base_url": f"{server.base_url}/v1"},
    }
    env = {"TURNKEEPER_PROVIDERS": json.dumps(config), "LK": "local-secret"}
    providers = default_providers(env)
    key = new_key()
    server.script(key, [[fake.text("hi"), fake.text("hi")]])

    await providers["local"].complete(request_for(key))
    await providers["open"].complete(request_for(key))

    first, second = server.requests_for(key)
    assert first.headers["authorization"] == "Bearer local-secret"
    assert second.headers["authorization"] == f"Bearer {NO_KEY}"
    assert first.body["max_tokens"] == 256 and "max_completion_tokens" not in first.body
    assert {"anthropic", "openai", "demo", "local", "open"} <= providers.keys()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_named_endpoint_whose_key_variable_is_unset_fails_as_auth(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDKs' own variables hold other servers' keys: never a fallback for this endpoint.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    config = {"local": {"kind": kind, "base_url": "http://127.0.0.1:9/v1", "api_key_env": "K"}}
    provider = default_providers({"TURNKEEPER_PROVIDERS": json.dumps(config)})["local"]

    with pytest.raises(ModelCallError) as raised:
        await provider.complete(request_for(new_key()))

    assert raised.value.error_type == LLM_AUTH_ERROR and "K is not set" in str(raised.value)
    assert await provider.count_input_tokens(request_for(new_key())) > 0


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ("{not json", "is not JSON"),
        ("[]", "JSON object"),
        ('{"openai": {"kind": "openai", "base_url": "http://x"}}', "'openai' cannot name"),
        ('{"Big Name": {"kind": "openai", "base_url": "http://x"}}', "cannot name"),
        ('{"local": {"kind": "ollama", "base_url": "http://x"}}', "local.kind"),
        ('{"local": {"kind": "openai"}}', "local.base_url"),
        ('{"local": {"kind": "openai", "base_url": "http://x", "api_key": "k"}}', "api_key"),
    ],
)
def test_bad_provider_configuration_is_refused_with_its_field(raw: str, needle: str) -> None:
    with pytest.raises(ProvidersConfigError, match="TURNKEEPER_PROVIDERS") as raised:
        named_endpoints(raw)
    assert needle in str(raised.value)


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


def test_the_worker_refuses_to_start_on_a_bad_configuration(tmp_path: Path) -> None:
    # Nothing listens at the address: the refusal must come before any connection attempt.
    env = {
        **os.environ,
        "TURNKEEPER_PROVIDERS": '{"local": {"kind": "ollama", "base_url": "http://x"}}',
        "TEMPORAL_ADDRESS": "127.0.0.1:9",
        "TURNKEEPER_DATA_DIR": str(tmp_path),
    }
    worker = Path(__file__).parents[2] / "worker.py"

    done = subprocess.run(
        [sys.executable, str(worker)], env=env, capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 1, done.stderr
    assert "TURNKEEPER_PROVIDERS.local.kind" in done.stderr
    assert "127.0.0.1:9" not in done.stderr


async def test_a_named_anthropic_endpoint_sends_its_own_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak")
    async with start_fake_anthropic() as server:
        config = {"backup": {"kind": "anthropic", "base_url": server.base_url, "api_key_env": "B"}}
        env = {"TURNKEEPER_PROVIDERS": json.dumps(config), "B": "backup-secret"}
        provider = default_providers(env)["backup"]
        key = new_key()
        server.script(key, [anthropic_fake.text("from the backup")])

        response = await provider.complete(request_for(key))

        assert response.content == [TextBlock(text="from the backup")]
        headers = server.requests_for(key)[0].headers
        assert "backup-secret" in (headers.get("x-api-key", "") + headers.get("authorization", ""))
        assert "sk-ant-must-not-leak" not in str(headers)
