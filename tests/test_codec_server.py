"""The codec server over HTTP, as the Web UI and the `temporal` CLI use it, on an encrypted turn
whose tool read a file of over 1 KiB (so that output is an external-storage reference)."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiohttp
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload, Payloads
from turnkeeper.contracts.names import WORKFLOW_TYPE
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import make_settings, new_key, scripted_request, temporal_binary
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.browser import find_chromium, headless_chromium
from tests.support.encrypted_stack import OLD_KEY, deployment, encrypted_dev_stack
from turnkeeper.devtools.codec_server import (
    Access,
    CodecService,
    running_codec_server,
)
from turnkeeper.devtools.devserver import DevServer
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.stores import open_store

PHRASE: Final = "saffron-glacier-6610"
SECRET: Final = "harbour-keeper-2294"
FILE_TEXT: Final = f"Ledger: {SECRET} logged the storm at the north light.\n" * 30
REFERENCE_TYPE: Final = b"temporal.api.sdk.v1.ExternalStorageReference"
ARTIFACTS: Final = Path(__file__).resolve().parents[1] / "test-artifacts"
CHROMIUM: Final = find_chromium()


@dataclass(frozen=True)
class EncryptedTurn:
    server: DevServer
    workflow_id: str
    report: AgentReport
    started: list[Payload]
    activity_results: list[Payload]
    store_root: Path


@pytest.fixture(scope="module")
async def turn(
    tmp_path_factory: pytest.TempPathFactory, fake_anthropic: FakeAnthropic
) -> AsyncIterator[EncryptedTurn]:
    root = tmp_path_factory.mktemp("codec")
    async with encrypted_dev_stack(root, OLD_KEY) as server:
        deployed = await deployment(server, root, OLD_KEY, fake_anthropic)
        (deployed.settings.workspace / "ledger.md").write_text(FILE_TEXT)
        key = new_key()
        fake_anthropic.script(
            key, [fake.tool_calls(("read_file", {"path": "ledger.md"})), fake.text("Logged.")]
        )
        request = scripted_request(key, task={"input": f"Read the ledger {PHRASE}."})
        async with deployed.worker() as queue:
            handle = await deployed.start(request, queue)
            report = await handle.result()
            history = await handle.fetch_history()
            started = [p for e in history.events[:1] for p in payloads_in(e)]
            results = [
                p
                for event in history.events
                if event.HasField("activity_task_completed_event_attributes")
                for p in payloads_in(event.activity_task_completed_event_attributes)
            ]
            # The worker keeps running: the Web UI asks it for the workflow's metadata.
            yield EncryptedTurn(server, handle.id, report, started, results, root)


def payloads_in(message: Message) -> Iterator[Payload]:
    """Every payload anywhere inside a history event."""
    if isinstance(message, Payload):
        yield message
        return
    for field, value in message.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        if isinstance(value, Message):
            values = [value]
        elif field.message_type.GetOptions().map_entry:
            values = value.values()
        else:
            values = value
        for item in values:
            if isinstance(item, Message):
                yield from payloads_in(item)


def body(payloads: list[Payload]) -> str:
    return json_format.MessageToJson(Payloads(payloads=payloads))


def parsed(text: str) -> list[Payload]:
    return list(json_format.Parse(text, Payloads()).payloads)


def joined(payloads: list[Payload]) -> bytes:
    return b"\n".join(p.data for p in payloads)


async def post(
    url: str, payloads: list[Payload], headers: dict[str, str] | None = None
) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            url,
            data=body(payloads),
            headers={
                "Content-Type": "application/json",
                "X-Namespace": "default",
                **(headers or {}),
            },
        ) as response,
    ):
        return response.status, await response.text()


def test_history_holds_only_ciphertext_and_references(turn: EncryptedTurn) -> None:
    encodings = {p.metadata.get("encoding") for p in [*turn.started, *turn.activity_results]}
    assert encodings <= {b"binary/encrypted", b"json/protobuf"}, encodings
    assert PHRASE.encode() not in joined(turn.started)
    assert any(p.metadata.get("messageType") == REFERENCE_TYPE for p in turn.activity_results)


async def test_decode_returns_plaintext_with_references_resolved(turn: EncryptedTurn) -> None:
    url = f"{turn.server.ui_codec_endpoint}/decode"
    status, text = await post(url, [*turn.started, *turn.activity_results])
    assert status == 200, text
    decoded = parsed(text)
    assert len(decoded) == len(turn.started) + len(turn.activity_results)
    assert all(p.metadata["encoding"] in (b"json/plain", b"binary/null") for p in decoded)
    assert PHRASE.encode() in joined(decoded) and SECRET.encode() in joined(decoded)


async def test_preserved_references_are_downloaded_on_request(turn: EncryptedTurn) -> None:
    base = turn.server.ui_codec_endpoint
    status, text = await post(f"{base}/decode?preserveStorageRefs=true", turn.activity_results)
    assert status == 200, text
    kept = parsed(text)
    references = [p for p in kept if p.metadata.get("messageType") == REFERENCE_TYPE]
    assert references and SECRET.encode() not in joined(kept)
    assert all(p.external_payloads[0].size_bytes > 1024 for p in references)

    status, text = await post(f"{base}/download", references)
    assert status == 200, text
    assert SECRET.encode() in joined(parsed(text))


async def test_encode_then_decode_round_trips(turn: EncryptedTurn) -> None:
    plain = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps({"x": PHRASE}).encode())
    status, text = await post(f"{turn.server.ui_codec_endpoint}/encode", [plain])
    [encrypted] = parsed(text)
    assert status == 200 and encrypted.metadata["encoding"] == b"binary/encrypted"
    assert encrypted.metadata["encryption-key-id"] == b"old-key"
    _, text = await post(f"{turn.server.ui_codec_endpoint}/decode", [encrypted])
    assert parsed(text) == [plain]


async def test_the_browser_preflight_is_answered_for_the_ui_origin_only(
    turn: EncryptedTurn,
) -> None:
    ui_origin = f"http://localhost:{turn.server.ui_port}"
    async with aiohttp.ClientSession() as session:
        for origin, allowed in ((ui_origin, True), ("http://evil.example", False)):
            async with session.options(
                f"{turn.server.ui_codec_endpoint}/decode",
                headers={
                    "Origin": origin,
                    "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "content-type,x-namespace",
                },
            ) as response:
                assert response.status == 204
                granted = response.headers.get("Access-Control-Allow-Origin")
                assert granted == (origin if allowed else None)
                if allowed:
                    assert "X-Namespace" in response.headers["Access-Control-Allow-Headers"]


@pytest.fixture
async def guarded(turn: EncryptedTurn) -> AsyncIterator[str]:
    """A codec server over the turn's store that requires a token."""
    keyring = Keyring.parse(OLD_KEY)
    store = open_store(make_settings(turn.store_root, "unused"), keyring)
    access = Access(frozenset({"default"}), "s3cret-token", frozenset({"http://localhost:8233"}))
    async with running_codec_server(
        CodecService.over(store, keyring), access, host="127.0.0.1", port=0
    ) as url:
        yield url


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": "Basic s3cret-token"}, 401),
        ({"Authorization": "Bearer s3cret-token", "X-Namespace": "payments"}, 403),
        ({"Authorization": "Bearer s3cret-token"}, 200),
    ],
)
async def test_a_token_and_a_served_namespace_are_required(
    turn: EncryptedTurn, guarded: str, headers: dict[str, str], expected: int
) -> None:
    status, text = await post(f"{guarded}/decode", turn.started, headers)
    assert status == expected, text
    if expected == 200:
        assert PHRASE.encode() in joined(parsed(text))
    else:
        assert PHRASE not in text


async def test_a_body_that_is_not_payloads_is_a_clear_400(guarded: str) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{guarded}/decode",
            data="{not json",
            # X-Namespace: the Web UI and the temporal CLI always send it, and it is required.
            headers={"Authorization": "Bearer s3cret-token", "X-Namespace": "default"},
        ) as response,
    ):
        assert response.status == 400
        assert "not proto-JSON Payloads" in (await response.json())["message"]


async def test_an_unknown_key_is_a_clear_422(turn: EncryptedTurn) -> None:
    store = open_store(make_settings(turn.store_root, "unused"), Keyring())
    access = Access(frozenset({"default"}), None, frozenset())
    async with running_codec_server(
        CodecService.over(store, Keyring()), access, host="127.0.0.1", port=0
    ) as url:
        status, text = await post(f"{url}/decode", turn.started)
    assert status == 422
    assert "'old-key'" in json.loads(text)["message"]


async def test_the_temporal_cli_reads_the_turn_through_the_codec_server(
    turn: EncryptedTurn,
) -> None:
    def result(*extra: str) -> str:
        command = [
            temporal_binary("temporal"), "workflow", "result", "--workflow-id", turn.workflow_id,
            "--address", turn.server.address, *extra,
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        return done.stdout + done.stderr

    # The codec server requires X-Namespace and a Host it serves: the CLI's requests show both.
    assert PHRASE not in await asyncio.to_thread(result)
    with_codec = await asyncio.to_thread(
        result, "--codec-endpoint", str(turn.server.ui_codec_endpoint)
    )
    assert PHRASE in with_codec and SECRET in with_codec, with_codec[:2000]


async def test_the_temporal_cli_starts_a_turn_encrypted_through_the_codec_server(
    turn: EncryptedTurn, guarded: str
) -> None:
    """The README's `temporal workflow start` with --codec-endpoint and --codec-auth: the
    request reaches history encrypted. (No worker polls its queue: only the start is looked at.)"""
    phrase = f"cli-kestrel-{new_key()}"
    request = scripted_request(new_key(), task={"input": f"Summarise {phrase}."})
    workflow_id = f"cli-encrypted-{new_key()}"
    codec = ["--codec-endpoint", guarded, "--codec-auth", "Bearer s3cret-token"]

    def cli(*args: str) -> str:
        command = [temporal_binary("temporal"), *args, "--address", turn.server.address]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    await asyncio.to_thread(
        cli, "workflow", "start", "--type", WORKFLOW_TYPE, "--task-queue", f"idle-{new_key()}",
        "--workflow-id", workflow_id, "--input", json.dumps(request), *codec,
    )  # fmt: skip
    show = ("workflow", "show", "--workflow-id", workflow_id, "-o", "json")
    try:
        shown = await asyncio.to_thread(cli, *show)
        stored = start_input(shown)
        assert stored["metadata"] == {
            "encoding": b"binary/encrypted",
            "encryption-key-id": b"old-key",
        }
        assert phrase not in shown
        read_back = start_input(await asyncio.to_thread(cli, *show, *codec))
        assert read_back["metadata"] == {"encoding": b"json/plain"}
        assert json.loads(read_back["data"]) == request
    finally:
        await asyncio.to_thread(cli, "workflow", "terminate", "--workflow-id", workflow_id)


def start_input(shown: str) -> dict[str, Any]:
    """The workflow input of `temporal workflow show -o json`, its base64 decoded."""
    started = json.loads(shown)["events"][0]["workflowExecutionStartedEventAttributes"]
    [payload] = started["input"]["payloads"]
    metadata = {name: base64.b64decode(value) for name, value in payload["metadata"].items()}
    return {"metadata": metadata, "data": base64.b64decode(payload["data"])}


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (Debian: apt-get install chromium)")
async def test_the_web_ui_shows_the_decrypted_input_and_tool_output(turn: EncryptedTurn) -> None:
    url = f"{turn.server.ui_url}/namespaces/default/workflows/{turn.workflow_id}"
    assert CHROMIUM is not None
    async with headless_chromium(CHROMIUM) as page:
        await page.goto(url)
        try:
            text = await page.wait_for_text(SECRET, timeout_s=45)
        except AssertionError:
            text = await page.text()
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(ARTIFACTS / "web-ui-encrypted-turn.png")
    assert PHRASE in text
    assert SECRET in text
