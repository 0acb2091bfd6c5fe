"""A provider key read from a file or a command (`api_key_file`, `api_key_command`,
`ANTHROPIC_API_KEY_FILE`): rotated under a running worker, the call that meets the 401 reads the
key again and is made once more, billed once; a key still refused fails as today. The fake APIs
check the key per script and echo a refused one in their 401, as some servers do."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from turnkeeper.activities.providers.cassette_provider import CassetteSettings, with_cassette
from turnkeeper.activities.providers.endpoints import ProvidersConfigError, default_providers
from turnkeeper.activities.providers.provider import ModelCallError, ModelProvider
from turnkeeper.contracts.errors import LLM_AUTH_ERROR
from turnkeeper.contracts.messages import TextBlock

from tests.fakes import fake_anthropic as anthropic_fake
from tests.fakes import openai_replies as openai_fake
from tests.fakes.fake_anthropic import FakeAnthropic, start_fake_anthropic
from tests.fakes.fake_openai import FakeOpenAI
from tests.unit.activities.providers.openai_requests import new_key, request_for

FIRST, SECOND, STALE = "sk-first-0123456789", "sk-second-9876543210", "sk-stale-5555555555"
# Prints the file named by its first argument and notes each run in the second.
PRINT_KEY = (
    "import pathlib, sys; pathlib.Path(sys.argv[2]).open('a').write('run\\n'); "
    "print(pathlib.Path(sys.argv[1]).read_text())"
)


@pytest.fixture
async def anthropic_server() -> AsyncIterator[FakeAnthropic]:
    async with start_fake_anthropic() as server:
        yield server


def endpoint(name: str, kind: str, base_url: str, **key: Any) -> ModelProvider:
    config = {name: {"kind": kind, "base_url": base_url, **key}}
    return default_providers({"TURNKEEPER_PROVIDERS": json.dumps(config)})[name]


def gateway(**key: Any) -> dict[str, str]:
    config = {"gw": {"kind": "openai", "base_url": "http://x", **key}}
    return {"TURNKEEPER_PROVIDERS": json.dumps(config)}


def key_command(key_file: Path, runs: Path) -> list[str]:
    return [sys.executable, "-c", PRINT_KEY, str(key_file), str(runs)]


def texts(fake: Any, count: int) -> list[Any]:
    return [[fake.text(f"answer {k}")] for k in range(count)]


async def test_an_anthropic_key_file_rotated_mid_run_is_read_again_and_billed_once(
    anthropic_server: FakeAnthropic, tmp_path: Path
) -> None:
    key_file, script = tmp_path / "key", new_key()
    key_file.write_text(FIRST + "\n")
    provider = endpoint(
        "backup", "anthropic", anthropic_server.base_url, api_key_file=str(key_file)
    )
    anthropic_server.script(script, [[anthropic_fake.text("one"), anthropic_fake.text("two")]])
    anthropic_server.require_key(script, FIRST)
    assert (await provider.complete(request_for(script))).content == [TextBlock(text="one")]

    key_file.write_text(SECOND + "\n")
    anthropic_server.require_key(script, SECOND)
    with structlog.testing.capture_logs() as logs:
        streamed: list[str] = []
        answer = await provider.complete(request_for(script), on_text=streamed.append)

    assert answer.content == [TextBlock(text="two")] and "".join(streamed) == "two"
    sent = [anthropic_server.sent_key(r) for r in anthropic_server.requests_for(script)]
    assert sent == [FIRST, FIRST, SECOND]
    assert len(anthropic_server.billed_for(script)) == 2  # one per answered call, none for a 401
    assert [(e["event"], e["source"]) for e in logs] == [
        ("credential_renewed", "TURNKEEPER_PROVIDERS.backup.api_key_file")
    ]
    assert FIRST not in repr(logs) + repr(provider) and SECOND not in repr(logs)


async def test_an_openai_key_command_is_run_once_for_calls_refused_together(
    openai_server: FakeOpenAI, tmp_path: Path
) -> None:
    key_file, runs, script = tmp_path / "key", tmp_path / "runs", new_key()
    key_file.write_text(FIRST)
    command = key_command(key_file, runs)
    provider = endpoint("local", "openai", f"{openai_server.base_url}/v1", api_key_command=command)
    openai_server.script(script, [[openai_fake.text("answer")]])
    openai_server.require_key(script, FIRST)
    await provider.complete(request_for(script))
    # Once at load, to check it; the key read then is the one sent.
    assert runs.read_text().count("run") == 1

    key_file.write_text(SECOND)
    openai_server.require_key(script, SECOND)
    answers = await asyncio.gather(*(provider.complete(request_for(script)) for _ in range(5)))

    assert all(answer.content == [TextBlock(text="answer")] for answer in answers)
    assert runs.read_text().count("run") == 2
    sent = [openai_server.sent_key(r) for r in openai_server.requests_for(script)]
    assert sent.count(SECOND) == 5
    # Answered (and so billed) once each: the fake answers no request it refused with 401.
    answered = [r for r in openai_server.requests_for(script) if r.attempt is not None]
    assert len(answered) == 6


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
async def test_a_key_still_refused_after_reading_it_again_fails_as_auth(
    kind: str, anthropic_server: FakeAnthropic, openai_server: FakeOpenAI, tmp_path: Path
) -> None:
    server: FakeAnthropic = anthropic_server if kind == "anthropic" else openai_server
    base_url = server.base_url if kind == "anthropic" else f"{server.base_url}/v1"
    replies = anthropic_fake if kind == "anthropic" else openai_fake
    key_file, script = tmp_path / "key", new_key()
    key_file.write_text(FIRST)
    provider = endpoint("gw", kind, base_url, api_key_file=str(key_file))
    server.script(script, [[replies.text("one")]])
    server.require_key(script, FIRST)
    await provider.complete(request_for(script))
    key_file.write_text(STALE)
    server.require_key(script, SECOND)

    with pytest.raises(ModelCallError) as raised:
        await provider.complete(request_for(script))

    assert (raised.value.error_type, raised.value.status) == (LLM_AUTH_ERROR, 401)
    message = str(raised.value)
    assert "returned 401" in message and "TURNKEEPER_PROVIDERS.gw.api_key_file" in message
    # The 401 echoed the keys it was sent; neither is in the failure, nor in its chain.
    assert "[redacted]" in message
    assert FIRST[:8] not in message and STALE[:8] not in message
    assert raised.value.__cause__ is None and raised.value.__context__ is None
    assert len(server.requests_for(script)) == 3  # the answered call, the 401, one retry


async def test_the_built_in_anthropic_provider_reads_anthropic_api_key_file(
    anthropic_server: FakeAnthropic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.base_url)
    key_file, script = tmp_path / "key", new_key()
    key_file.write_text(FIRST)
    provider = default_providers({"ANTHROPIC_API_KEY_FILE": str(key_file)})["anthropic"]
    anthropic_server.script(script, [[anthropic_fake.text("hello")]])
    anthropic_server.require_key(script, SECOND)
    key_file.write_text(SECOND)

    assert (await provider.complete(request_for(script))).content == [TextBlock(text="hello")]
    sent = [anthropic_server.sent_key(r) for r in anthropic_server.requests_for(script)]
    assert sent == [FIRST, SECOND]


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        (
            {"ANTHROPIC_API_KEY_FILE": "{absent}"},
            "ANTHROPIC_API_KEY_FILE: file '{absent}' does not exist",
        ),
        (
            {"OPENAI_API_KEY_COMMAND": "false"},
            "OPENAI_API_KEY_COMMAND: command 'false' exited with status 1",
        ),
        ({"OPENAI_API_KEY_COMMAND": "'unclosed"}, "OPENAI_API_KEY_COMMAND: cannot be split"),
        ({"OPENAI_API_KEY_COMMAND": "  "}, "OPENAI_API_KEY_COMMAND: holds no command"),
        ({"ANTHROPIC_API_KEY": FIRST, "ANTHROPIC_API_KEY_FILE": "{absent}"}, "are both set"),
        (
            gateway(api_key_file="{absent}"),
            "TURNKEEPER_PROVIDERS.gw.api_key_file: file '{absent}' does not exist",
        ),
        (
            gateway(api_key_command=["true"]),
            "TURNKEEPER_PROVIDERS.gw.api_key_command: command 'true' gave an empty value",
        ),
        (
            gateway(api_key_env="K", api_key_file="k"),
            "api_key_env and api_key_file are both set",
        ),
    ],
)
def test_a_key_source_that_cannot_be_read_stops_the_worker_naming_it(
    env: dict[str, str], needle: str, tmp_path: Path
) -> None:
    absent = str(tmp_path / "absent")
    env = {name: value.replace("{absent}", absent) for name, value in env.items()}
    with pytest.raises(ProvidersConfigError) as raised:
        default_providers(env)
    assert needle.replace("{absent}", absent) in str(raised.value)
    assert FIRST not in str(raised.value)


async def test_a_key_read_from_a_file_never_enters_a_cassette(
    anthropic_server: FakeAnthropic, tmp_path: Path
) -> None:
    key_file, script, path = tmp_path / "key", new_key(), tmp_path / "calls.cassette"
    key_file.write_text(FIRST)
    config = {"backup": {"kind": "anthropic", "base_url": anthropic_server.base_url}}
    config["backup"]["api_key_file"] = str(key_file)
    providers = default_providers({"TURNKEEPER_PROVIDERS": json.dumps(config)})
    # No variable holds the key: the recorder must learn it from the credential itself.
    recorded = with_cassette(providers, CassetteSettings(path, "record"))["backup"]
    anthropic_server.script(script, [anthropic_fake.text(f"your key is {FIRST}")])

    await recorded.complete(request_for(script))

    text = path.read_text()
    assert FIRST not in text and "your key is [redacted]" in text


async def test_a_refusal_other_than_401_is_not_a_reason_to_read_the_key_again(
    anthropic_server: FakeAnthropic, tmp_path: Path
) -> None:
    key_file, runs, script = tmp_path / "key", tmp_path / "runs", new_key()
    key_file.write_text(FIRST)
    command = key_command(key_file, runs)
    provider = endpoint("backup", "anthropic", anthropic_server.base_url, api_key_command=command)
    anthropic_server.script(script, [anthropic_fake.error(403, "permission_error")])

    with pytest.raises(ModelCallError) as raised:
        await provider.complete(request_for(script))

    assert (raised.value.error_type, raised.value.status) == (LLM_AUTH_ERROR, 403)
    assert len(anthropic_server.requests_for(script)) == 1
    assert runs.read_text().count("run") == 1  # at load only
