"""Payload encryption in `python worker.py`: off by default, on with `TURNKEEPER_ENCRYPTION_KEYS`
(a key from `turnkeeper keys new`) for the worker and the Python client alike, and the codec
server (`turnkeeper codec-server`) through which the `temporal` CLI reads and writes an
encrypted turn."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

import turnkeeper
from tests.conftest import new_key, temporal_binary
from tests.fakes import fake_anthropic as anthropic
from tests.support.ports import free_ports
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess, run
from tests.system.driving import (
    agent,
    connect_like,
    connect_with,
    history,
    metadata,
    payloads,
    readable,
    task,
)
from tests.test_devserver import port_is_open

REFERENCE = "temporal.api.sdk.v1.ExternalStorageReference"


def script_a_listing(stack: SystemStack, key: str) -> None:
    stack.fake.script(
        key, [anthropic.tool_calls(("list_files", {"path": "."})), anthropic.text("Listed it.")]
    )


async def keyed_worker(stack: SystemStack) -> tuple[WorkerProcess, str]:
    """A worker with a fresh key from `turnkeeper keys new`; the key's id."""
    entry = (await stack.turnkeeper("keys", "new")).stdout.strip()
    worker = await stack.start_worker(env={"TURNKEEPER_ENCRYPTION_KEYS": entry})
    return worker, entry.partition(":")[0]


def files_holding(folder: Path, text: str) -> list[Path]:
    return [
        path for path in folder.rglob("*") if path.is_file() and text.encode() in path.read_bytes()
    ]


async def test_without_keys_the_history_holds_the_turn_in_plain_json(stack: SystemStack) -> None:
    worker = await stack.start_worker()
    key = new_key()
    script_a_listing(stack, key)
    phrase = f"the plain phrase {key}"
    request = {"agent": agent(key), "task": task(key, phrase)}

    await stack.temporal(
        "workflow", "start", "--type", "AgentTurnWorkflow", "--task-queue", worker.task_queue,
        "--workflow-id", f"turn-{key}", "--input", json.dumps(request),
    )  # fmt: skip
    answer = await stack.temporal("workflow", "result", "--workflow-id", f"turn-{key}")

    assert answer["result"]["output"] == "Listed it."
    shown = await history(stack, f"turn-{key}")
    assert "binary/encrypted" not in {metadata(payload) for payload in payloads(shown)}
    assert phrase in readable(shown)


async def test_with_keys_the_history_holds_only_ciphertext_and_the_client_reads_the_report(
    stack: SystemStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, key_id = await keyed_worker(stack)
    key = new_key()
    script_a_listing(stack, key)
    phrase = f"the secret phrase {key}"
    client = await connect_like(worker, monkeypatch)  # reads TURNKEEPER_ENCRYPTION_KEYS too

    handle = await turnkeeper.start_turn(client, agent=agent(key), task=task(key, phrase))
    report = await handle.result()

    assert report.output == "Listed it." and phrase in report.messages[0].text()
    shown = await history(stack, handle.id)
    # Besides ciphertext, only references to the content store, named by a digest of the
    # ciphertext stored there (README: histories refer to content by its SHA-256).
    sealed = [
        payload for payload in payloads(shown) if metadata(payload, "messageType") != REFERENCE
    ]
    assert {metadata(payload) for payload in sealed} == {"binary/encrypted"}
    assert {metadata(payload, "encryption-key-id") for payload in sealed} == {key_id}
    assert phrase not in readable(shown)
    assert files_holding(Path(worker.environment["TURNKEEPER_DATA_DIR"]), phrase) == []
    assert phrase not in worker.log_path.read_text()  # log lines carry ids and figures only


@asynccontextmanager
async def codec_server(worker: WorkerProcess, folder: Path, **env: str) -> AsyncIterator[str]:
    """`turnkeeper codec-server --port …` with the worker's keys and content store; its URL."""
    [port] = free_ports(1)
    log = folder / "codec-server.log"
    command = [temporal_binary("turnkeeper"), "codec-server", "--port", str(port)]
    process = spawn(command, {**worker.environment, **env}, log)
    try:

        async def listening() -> bool:
            assert process.poll() is None, log.read_text()
            return port_is_open(port)

        await until(listening, bool, "the codec server to listen")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0, log.read_text()


def spawn(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as output:
        return subprocess.Popen(command, env=env, stdout=output, stderr=output)


async def test_the_temporal_cli_writes_and_reads_a_turn_through_the_codec_server(
    stack: SystemStack, tmp_path: Path
) -> None:
    worker, _ = await keyed_worker(stack)
    key = new_key()
    script_a_listing(stack, key)
    phrase = f"the phrase for the codec {key}"
    request = {"agent": agent(key), "task": task(key, phrase)}

    async with codec_server(worker, tmp_path, TURNKEEPER_CODEC_TOKEN="tok-1234") as url:
        codec = ["--codec-endpoint", url, "--codec-auth", "Bearer tok-1234"]
        # Started through the codec server too, so the input reaches history encrypted.
        await stack.temporal(
            "workflow", "start", "--type", "AgentTurnWorkflow", "--task-queue", worker.task_queue,
            "--workflow-id", f"turn-{key}", "--input", json.dumps(request), *codec,
        )  # fmt: skip
        answer = await stack.temporal("workflow", "result", "--workflow-id", f"turn-{key}", *codec)
        decoded = await history(stack, f"turn-{key}", *codec)
        # The CLI retries a refused decode until its deadline: 2 s are enough to see it fail.
        unauthorised = await run(
            [temporal_binary("temporal"), "workflow", "show", "--workflow-id", f"turn-{key}",
             "--address", stack.address, "-o", "json", "--codec-endpoint", url,
             "--command-timeout", "2s"],
        )  # fmt: skip

    assert answer["result"]["output"] == "Listed it."
    assert phrase in readable(decoded)
    assert phrase not in readable(await history(stack, f"turn-{key}"))
    assert unauthorised.returncode != 0 and phrase not in unauthorised.stdout
    printed = (tmp_path / "codec-server.log").read_text()
    assert "codec request refused: no valid token" in printed
    # The command it prints for the user to copy, whole on one line.
    assert f"temporal workflow show --workflow-id ID --codec-endpoint {url}\n" in printed


async def test_a_worker_without_the_key_stops_naming_it_and_the_turn_waits_for_one_with_it(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = (await stack.turnkeeper("keys", "new", "--id", "k-first")).stdout.strip()
    other = (await stack.turnkeeper("keys", "new", "--id", "k-other")).stdout.strip()
    queue = f"system-{new_key()}"
    shared = {"TURNKEEPER_DATA_DIR": str(tmp_path / "data"), "AGENT_TASK_QUEUE": queue}
    lacking = await stack.start_worker(
        task_queue=queue, env={**shared, "TURNKEEPER_ENCRYPTION_KEYS": other}
    )
    # Provoked here: the stop it announces and the task it gives back to the queue.
    lacking.allowed_errors += [
        "encryption key missing",
        "encrypted with key 'k-first'",
        "MissingEncryptionKeyError",
    ]
    key = new_key()
    script_a_listing(stack, key)
    client = await connect_with(
        {**shared, "TEMPORAL_ADDRESS": stack.address, "TURNKEEPER_ENCRYPTION_KEYS": first},
        monkeypatch,
    )

    handle = await turnkeeper.start_turn(client, agent=agent(key), task=task(key))
    stopped = await asyncio.to_thread(lacking.process.wait, 30)
    holder = await stack.start_worker(
        task_queue=queue, env={**shared, "TURNKEEPER_ENCRYPTION_KEYS": first}
    )
    report = await handle.result()
    refused = await stack.turnkeeper("result", handle.id, worker=lacking, check=False)

    lines = lacking.log_path.read_text().splitlines()
    assert stopped != 0 and "Traceback" not in "\n".join(lines)
    assert "content is encrypted with key 'k-first'" in lines[-1]
    assert report.output == "Listed it." and holder.events("turn_completed")
    assert refused.returncode == 1
    assert "content is encrypted with key 'k-first'" in refused.stdout + refused.stderr


async def test_the_codec_server_refuses_to_listen_beyond_loopback_without_a_token(
    stack: SystemStack,
) -> None:
    done = await stack.turnkeeper(
        "codec-server", "--host", "0.0.0.0", "--port", "0", check=False
    )  # fmt: skip

    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "error: the codec server decrypts everything: set TURNKEEPER_CODEC_TOKEN to listen on "
        "0.0.0.0 (or listen on 127.0.0.1 only)"
    ]
