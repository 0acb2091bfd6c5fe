"""Cassettes without a server: the key of a model call, matching and the nearest difference, the
file format and its errors, streaming, concurrent appends, and secrets kept out."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from turnkeeper.activities.providers import cassette_file
from turnkeeper.activities.providers.cassette_file import CassetteFormatError, Exchange
from turnkeeper.activities.providers.cassette_key import (
    nearest_difference,
    request_key,
    request_record,
)
from turnkeeper.activities.providers.cassette_provider import (
    Cassette,
    CassetteProvider,
    CassetteSettings,
    environment_secrets,
    with_cassette,
)
from turnkeeper.activities.providers.provider import (
    ModelCallError,
    ModelRequest,
    ModelResponse,
    TextSink,
)
from turnkeeper.contracts.errors import CASSETTE_MISS
from turnkeeper.contracts.messages import Message, TextBlock
from turnkeeper.contracts.turn import Usage

from turnkeeper.client.settings_error import SettingsError
from turnkeeper.testing.scripted_model import ScriptedProvider
from turnkeeper.worker.plugin import TurnkeeperPlugin
from turnkeeper.worker.settings import Settings


def request(text: str = "Summarise the notes.", **fields: object) -> ModelRequest:
    return ModelRequest.model_validate(
        {
            "model": "claude-sonnet-4-6",
            "system": "You are careful.",
            "messages": [Message(role="user", content=[TextBlock(text=text)])],
            "max_tokens": 1024,
            **fields,
        }
    )


def answer(text: str) -> ModelResponse:
    return ModelResponse(
        content=[TextBlock(text=text)],
        stop_reason="end_turn",
        usage=Usage(input_tokens=12, output_tokens=3),
        model="claude-sonnet-4-6",
    )


class Recorder:
    """A provider that answers "echo: <last text>" and streams it in two pieces."""

    name = "anthropic"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        self.calls += 1
        text = f"echo: {request.messages[-1].content[0].text}"  # type: ignore[union-attr]
        if on_text is not None:
            on_text(text[:4])
            on_text(text[4:])
        return answer(text)

    async def count_input_tokens(self, request: ModelRequest) -> int:
        return 99


class Unreachable(Recorder):
    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        raise AssertionError("a replaying cassette reached the provider")


def cassette(path: Path, mode: str, secrets: list[str] | None = None) -> Cassette:
    return Cassette(CassetteSettings(path, mode), secrets=secrets or [])  # type: ignore[arg-type]


# --- the key ---------------------------------------------------------------------------------


def test_the_key_covers_what_is_sent_and_nothing_else() -> None:
    base = request_key(request_record("anthropic", request()))
    assert base == request_key(request_record("anthropic", request()))
    changed = [
        request_record("openai", request()),
        request_record("anthropic", request(model="claude-haiku-4-5")),
        request_record("anthropic", request(system="You are brief.")),
        request_record("anthropic", request(max_tokens=2048)),
        request_record("anthropic", request(prompt_cache=True)),
        request_record("anthropic", request("Another task.")),
        request_record(
            "anthropic",
            request(tools=[{"name": "t", "description": "d", "input_schema": {"type": "object"}}]),
        ),
    ]
    assert base not in {request_key(record) for record in changed}


def test_a_record_holds_no_turn_or_workflow_identity() -> None:
    record = request_record("anthropic", request())
    assert list(record)[:3] == ["provider", "model", "system"]
    assert list(record)[-1] == "messages"
    text = json.dumps(record)
    assert "workflow" not in text and "task" not in text and "turn" not in text


# --- the nearest difference ------------------------------------------------------------------


def test_the_nearest_recorded_call_names_the_first_difference() -> None:
    sent = request_record("anthropic", request("Summarise the notes, briefly."))
    recorded = [
        request_record("anthropic", request("x", system="Other prompt.")),
        request_record("anthropic", request("Summarise the notes.")),
    ]
    difference = nearest_difference(sent, recorded)
    assert difference == (
        'at messages[0].content[0].text: sent "Summarise the notes, briefly.", '
        'recorded "Summarise the notes."'
    )


def test_a_longer_conversation_names_the_message_the_recording_lacks() -> None:
    longer = request()
    longer.messages.append(Message(role="assistant", content=[TextBlock(text="Done.")]))
    difference = nearest_difference(
        request_record("anthropic", longer), [request_record("anthropic", request())]
    )
    assert difference is not None
    assert difference.startswith("sent messages[1].role")
    assert "which the recording lacks" in difference


def test_long_values_are_cut_and_nothing_recorded_is_none() -> None:
    sent = request_record("anthropic", request("a" * 500))
    difference = nearest_difference(sent, [request_record("anthropic", request("b" * 500))])
    assert difference is not None and len(difference) < 250 and "…" in difference
    assert nearest_difference(sent, []) is None


# --- record and replay -----------------------------------------------------------------------


async def test_record_then_replay_answers_without_the_provider(tmp_path: Path) -> None:
    path = tmp_path / "calls.cassette"
    recorder = Recorder()
    recording = CassetteProvider("anthropic", recorder, cassette(path, "record"))
    streamed: list[str] = []
    recorded = await recording.complete(request(), streamed.append)
    assert streamed == ["echo", ": Summarise the notes."]

    replaying = CassetteProvider("anthropic", Unreachable(), cassette(path, "replay"))
    replayed: list[str] = []
    assert await replaying.complete(request(), replayed.append) == recorded
    assert replayed == streamed
    assert await replaying.count_input_tokens(request()) == recorded.usage.input_tokens


async def test_a_call_recorded_without_streaming_replays_its_text_as_one_piece(
    tmp_path: Path,
) -> None:
    path = tmp_path / "calls.cassette"
    await CassetteProvider("anthropic", Recorder(), cassette(path, "record")).complete(request())
    replaying = CassetteProvider("anthropic", Unreachable(), cassette(path, "replay"))
    pieces: list[str] = []
    await replaying.complete(request(), pieces.append)
    assert pieces == ["echo: Summarise the notes."]


async def test_a_call_the_cassette_lacks_fails_naming_the_cassette(tmp_path: Path) -> None:
    path = tmp_path / "calls.cassette"
    await CassetteProvider("anthropic", Recorder(), cassette(path, "record")).complete(request())
    replaying = CassetteProvider("anthropic", Unreachable(), cassette(path, "replay"))

    with pytest.raises(ModelCallError) as miss:
        await replaying.complete(request("Something else."))

    assert miss.value.error_type == CASSETTE_MISS and not miss.value.retryable
    message = str(miss.value)
    assert str(path) in message and "(1 recorded)" in message
    assert 'at messages[0].content[0].text: sent "Something else."' in message


async def test_the_same_call_recorded_twice_is_kept_once(tmp_path: Path) -> None:
    path = tmp_path / "calls.cassette"
    recorder = Recorder()
    first = CassetteProvider("anthropic", recorder, cassette(path, "record"))
    second = CassetteProvider("anthropic", recorder, cassette(path, "record"))
    await first.complete(request())
    await second.complete(request())
    assert recorder.calls == 2  # recording always asks the provider
    assert len(cassette_file.load(path, missing_ok=False)) == 1


async def test_concurrent_recorders_append_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "calls.cassette"
    providers = [
        CassetteProvider("anthropic", Recorder(), cassette(path, "record")) for _ in range(4)
    ]
    await asyncio.gather(*(p.complete(request(f"task {i}")) for i in range(20) for p in providers))
    exchanges = cassette_file.load(path, missing_ok=False)
    assert sorted(e.request["messages"][0]["content"][0]["text"] for e in exchanges) == sorted(
        f"task {i}" for i in range(20)
    )


def test_with_cassette_wraps_every_provider_but_a_test_s_scripted_model(tmp_path: Path) -> None:
    scripted = ScriptedProvider()
    wrapped = with_cassette(
        {"anthropic": Recorder(), "openai": Recorder(), "scripted": scripted},
        CassetteSettings(tmp_path / "new.cassette", "record"),
    )
    assert {type(wrapped[name]) for name in ("anthropic", "openai")} == {CassetteProvider}
    assert wrapped["scripted"] is scripted  # the script is the recording
    assert (tmp_path / "new.cassette").read_text() == '{"turnkeeper_cassette": 1}\n'


# --- secrets ---------------------------------------------------------------------------------


async def test_secrets_never_enter_a_cassette(tmp_path: Path) -> None:
    key = "sk-ant-api03-very-secret-key-value"
    path = tmp_path / "calls.cassette"
    provider = CassetteProvider("anthropic", Recorder(), cassette(path, "record", [key]))
    await provider.complete(request(f"my key is {key}, keep it"))
    text = path.read_text()
    assert key not in text and key[:8] not in text
    assert "[redacted]" in text
    assert "x-api-key" not in text.lower() and "authorization" not in text.lower()


def test_environment_secrets_are_the_credentials_by_name() -> None:
    env = {
        "ANTHROPIC_API_KEY": "sk-ant-api03-abcdef",
        "LOCAL_KEY": "local-key-123456",
        "TURNKEEPER_CODEC_TOKEN": "token-abcdefgh",
        "TURNKEEPER_CASSETTE_MODE": "record",
        "SHORT_KEY": "1",
        "HOME": "/home/someone",
    }
    assert sorted(environment_secrets(env)) == sorted(
        ["sk-ant-api03-abcdef", "local-key-123456", "token-abcdefgh"]
    )


# --- the file --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("", "the cassette is empty"),
        ("hello\n", "not a cassette (its first line must be"),
        ('{"other": 1}\n', "not a cassette"),
        ('{"turnkeeper_cassette": 9}\n', "cassette format 9"),
        ('{"turnkeeper_cassette": 1}\nnot json\n', "line 2: not a recorded call"),
        ('{"turnkeeper_cassette": 1}\n{"key": "k"}\n', "line 2: not a recorded call (missing"),
        (
            '{"turnkeeper_cassette": 1}\n{"key": "k", "request": {}, "response": {}}\n',
            "line 2: not a recorded call",
        ),
    ],
)
def test_a_file_that_is_not_a_cassette_is_refused(
    tmp_path: Path, content: str, problem: str
) -> None:
    path = tmp_path / "bad.cassette"
    path.write_text(content)
    with pytest.raises(CassetteFormatError) as error:
        cassette_file.load(path, missing_ok=False)
    assert str(path) in str(error.value) and problem in str(error.value)


def test_replay_needs_an_existing_cassette(tmp_path: Path) -> None:
    with pytest.raises(CassetteFormatError, match="no such cassette; record one first"):
        cassette(tmp_path / "missing.cassette", "replay")


def test_a_recorded_line_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "calls.cassette"
    record = request_record("anthropic", request())
    exchange = Exchange(request_key(record), record, answer("hi"), ["h", "i"])
    assert cassette_file.append(path, exchange)
    assert cassette_file.load(path, missing_ok=False) == [exchange]


# --- the worker's settings -------------------------------------------------------------------


def test_settings_read_the_cassette_variables(tmp_path: Path) -> None:
    path = tmp_path / "calls.cassette"
    settings = Settings.from_env({"TURNKEEPER_CASSETTE": str(path)})
    assert settings.cassette == CassetteSettings(path, "replay")
    recording = Settings.from_env(
        {"TURNKEEPER_CASSETTE": str(path), "TURNKEEPER_CASSETTE_MODE": "record"}
    )
    assert recording.cassette == CassetteSettings(path, "record")
    assert Settings.from_env({}).cassette is None


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"TURNKEEPER_CASSETTE": "c", "TURNKEEPER_CASSETTE_MODE": "rec"}, "must be record or"),
        ({"TURNKEEPER_CASSETTE_MODE": "record"}, "TURNKEEPER_CASSETTE names no file"),
    ],
)
def test_wrong_cassette_variables_are_refused(env: dict[str, str], problem: str) -> None:
    with pytest.raises(SettingsError, match=problem):
        Settings.from_env(env)


def test_a_worker_with_a_file_that_is_not_a_cassette_stops_at_start(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# notes\n")
    settings = Settings.from_env(
        {
            "TURNKEEPER_CASSETTE": str(path),
            "AGENT_WORKSPACE": str(tmp_path / "ws"),
            "TURNKEEPER_DATA_DIR": str(tmp_path / "data"),
        }
    )
    with pytest.raises(SettingsError, match=r"TURNKEEPER_CASSETTE: .*notes.md: not a cassette"):
        TurnkeeperPlugin(settings=settings, providers={"anthropic": Recorder()})
