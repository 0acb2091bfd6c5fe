"""The fake Messages API itself: script routing, per-attempt steps and the request checks that
catch runtime bugs. Plain HTTP where the error text matters, the real SDK elsewhere."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import anthropic
import pytest

from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic, start_fake_anthropic

JsonDict = dict[str, Any]


@pytest.fixture
async def server() -> AsyncIterator[FakeAnthropic]:
    async with start_fake_anthropic() as started:
        yield started


@pytest.fixture
async def sdk(server: FakeAnthropic) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(api_key="test-key", base_url=server.base_url, max_retries=0)
    yield client
    await client.close()


def new_key() -> str:
    return f"fake-{uuid.uuid4().hex[:8]}"


def body_for(key: str | None, messages: list[JsonDict] | None = None, **extra: Any) -> JsonDict:
    body: JsonDict = {
        "model": "claude-test-1",
        "max_tokens": 100,
        "messages": messages or [{"role": "user", "content": "Hello"}],
    }
    if key:
        body["system"] = f"Test. {fake.script_marker(key)}"
    return body | extra


async def post(server: FakeAnthropic, body: JsonDict) -> tuple[int, JsonDict, dict[str, str]]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{server.base_url}/v1/messages", json=body) as response,
    ):
        headers = {name.lower(): value for name, value in response.headers.items()}
        return response.status, await response.json(), headers


def tool_turn(use_id: str, *results: JsonDict) -> list[JsonDict]:
    """A user question, an assistant tool call `use_id`, and a user message of `results`."""
    return [
        {"role": "user", "content": "Read it"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": use_id, "name": "read_file", "input": {}}],
        },
        {"role": "user", "content": list(results)},
    ]


def result(use_id: str) -> JsonDict:
    return {"type": "tool_result", "tool_use_id": use_id, "content": "ok"}


async def test_reply_has_the_api_shape(server: FakeAnthropic) -> None:
    key = new_key()
    server.script(key, [fake.text("Hi")])

    status, body, headers = await post(server, body_for(key))

    assert status == 200
    assert body["type"] == "message" and body["role"] == "assistant"
    assert body["model"] == "claude-test-1"
    assert body["content"] == [{"type": "text", "text": "Hi"}]
    assert (body["stop_reason"], body["stop_sequence"]) == ("end_turn", None)
    assert set(body["usage"]) == {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    }
    assert headers["request-id"].startswith("req_fake_")


async def test_error_has_the_api_shape(server: FakeAnthropic) -> None:
    key = new_key()
    server.script(key, [fake.rate_limited(retry_after=3)])

    status, body, headers = await post(server, body_for(key))

    assert status == 429
    assert body["type"] == "error"
    assert body["error"]["type"] == "rate_limit_error"
    assert headers["retry-after"] == "3"
    assert headers["request-id"].startswith("req_fake_")


@pytest.mark.parametrize(
    ("system", "expected"),
    [
        (None, "no [script:KEY] marker"),
        ("You are helpful.", "no [script:KEY] marker"),
        ("[script:nobody-registered-this]", "has no script 'nobody-registered-this'"),
    ],
)
async def test_unrouted_requests_are_refused(
    server: FakeAnthropic, system: str | None, expected: str
) -> None:
    request = body_for(None) | ({"system": system} if system else {})

    status, body, _ = await post(server, request)

    assert status == 400
    assert body["error"]["type"] == "invalid_request_error"
    assert expected in body["error"]["message"]
    assert server.requests[-1].attempt is None


async def test_marker_in_system_blocks(server: FakeAnthropic) -> None:
    key = new_key()
    server.script(key, [fake.text("found")])
    system = [{"type": "text", "text": "Intro."}, {"type": "text", "text": f"[script:{key}]"}]

    status, body, _ = await post(server, body_for(None, system=system))

    assert (status, body["content"][0]["text"]) == (200, "found")


async def test_step_follows_the_conversation(server: FakeAnthropic) -> None:
    key = new_key()
    server.script(key, [fake.text("first"), fake.text("second")])
    later = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ]

    _, again, _ = await post(server, body_for(key))
    _, second, _ = await post(server, body_for(key, later))
    status, ran_out, _ = await post(server, body_for(key, [*later, *later[1:]]))

    assert again["content"][0]["text"] == "first"
    assert second["content"][0]["text"] == "second"
    assert status == 400
    assert f"Script {key!r} ran out" in ran_out["error"]["message"]
    assert [r.step for r in server.requests_for(key)] == [0, 1, 2]


async def test_attempts_consume_a_step_list(
    server: FakeAnthropic, sdk: anthropic.AsyncAnthropic
) -> None:
    key = new_key()
    server.script(key, [[fake.overloaded(), fake.server_error(503), fake.text("ok")]])
    outcomes: list[str] = []

    for _ in range(4):
        try:
            message = await sdk.messages.create(**body_for(key))
        except anthropic.APIStatusError as error:
            outcomes.append(str(error.status_code))
        else:
            outcomes.append(message.content[0].text)  # type: ignore[union-attr]

    assert outcomes == ["529", "503", "ok", "ok"]
    assert [r.attempt for r in server.requests_for(key)] == [0, 1, 2, 3]


async def test_rescripting_resets_attempts(server: FakeAnthropic) -> None:
    key = new_key()
    server.script(key, [[fake.overloaded(), fake.text("ok")]])
    await post(server, body_for(key))

    server.script(key, [[fake.overloaded(), fake.text("ok")]])
    status, _, _ = await post(server, body_for(key))

    assert status == 529


async def test_dynamic_reply_reads_the_request(server: FakeAnthropic) -> None:
    key = new_key()
    server.script(key, [lambda body: fake.text(f"you said {body['messages'][-1]['content']}")])

    _, body, _ = await post(server, body_for(key, [{"role": "user", "content": "pineapple"}]))

    assert body["content"][0]["text"] == "you said pineapple"


async def test_a_failing_dynamic_reply_is_a_400(server: FakeAnthropic) -> None:
    # A 500 would be retried by the runtime until the test times out; a 400 fails at once.
    key = new_key()
    server.script(key, [lambda body: fake.text(body["no such field"])])

    status, body, _ = await post(server, body_for(key))

    assert status == 400
    assert "KeyError('no such field')" in body["error"]["message"]


async def test_tool_ids_are_stable_and_sanitised(server: FakeAnthropic) -> None:
    key = f"a-b.c{uuid.uuid4().hex[:4]}"
    server.script(key, [fake.tool_calls(("x", {}), ("y", {"n": 1}), text="Calling.")])

    _, first, _ = await post(server, body_for(key))
    _, retried, _ = await post(server, body_for(key))

    ids = [block["id"] for block in first["content"] if block["type"] == "tool_use"]
    clean = key.replace("-", "_").replace(".", "_")
    assert ids == [f"toolu_{clean}_0_0", f"toolu_{clean}_0_1"]
    assert retried["content"] == first["content"]
    assert first["stop_reason"] == "tool_use"


async def test_requests_for_filters_by_script(server: FakeAnthropic) -> None:
    mine, other = new_key(), new_key()
    server.script(mine, [fake.text("a")])
    server.script(other, [fake.text("b")])

    await post(server, body_for(other))
    await post(server, body_for(mine))

    assert [r.script_key for r in server.requests_for(mine)] == [mine]
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("messages", "extra", "expected"),
    [
        ([], {}, "at least one message"),
        ([{"role": "assistant", "content": "hi"}], {}, "starting with user"),
        (
            [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
            {},
            "roles must alternate",
        ),
        ([{"role": "user", "content": ""}], {}, "non-empty content"),
        ([{"role": "user", "content": [{"type": "text", "text": ""}]}], {}, "must be non-empty"),
        (
            tool_turn("toolu_1", {"type": "text", "text": "forgot"}),
            {},
            "without tool_result blocks",
        ),
        (tool_turn("toolu_1", result("toolu_1"), result("toolu_1")), {}, "exactly one"),
        (tool_turn("toolu_1", result("toolu_1"), result("toolu_9")), {}, "not in the previous"),
        (
            tool_turn("toolu_1", {"type": "text", "text": "note"}, result("toolu_1")),
            {},
            "must come first",
        ),
        ([{"role": "user", "content": [result("toolu_1")]}], {}, "need a tool_use"),
        (None, {"max_tokens": None}, "max_tokens: Field required"),
        (None, {"tools": [{"name": "t", "input_schema": {"type": "object"}}] * 2}, "unique"),
        (None, {"tools": [{"name": "t"}]}, "input_schema"),
    ],
)
async def test_malformed_conversations_are_refused(
    server: FakeAnthropic, messages: list[JsonDict] | None, extra: JsonDict, expected: str
) -> None:
    key = new_key()
    server.script(key, [fake.text("should not be reached")])
    request = body_for(key, **extra)
    if messages is not None:
        request["messages"] = messages
    if extra.get("max_tokens", 0) is None:
        del request["max_tokens"]

    status, body, _ = await post(server, request)

    assert status == 400
    assert expected in body["error"]["message"]


async def test_a_well_formed_tool_turn_is_accepted(server: FakeAnthropic) -> None:
    key = new_key()
    server.script(key, [fake.text("unused"), fake.text("answered")])

    status, body, _ = await post(server, body_for(key, tool_turn("toolu_1", result("toolu_1"))))

    assert (status, body["content"][0]["text"]) == (200, "answered")


async def test_count_tokens(server: FakeAnthropic, sdk: anthropic.AsyncAnthropic) -> None:
    counted = await sdk.messages.count_tokens(
        model="claude-test-1", messages=[{"role": "user", "content": "x" * 40}]
    )

    assert counted.input_tokens == 10


def test_script_keys_must_fit_the_marker() -> None:
    with pytest.raises(ValueError, match="script key"):
        FakeAnthropic().script("two words", [fake.text("x")])
