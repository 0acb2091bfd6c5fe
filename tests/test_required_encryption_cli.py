"""`python worker.py` with TURNKEEPER_REQUIRE_ENCRYPTION=1, driven with nothing but the `temporal`
CLI as the README says: without --codec-endpoint a turn request fails before any model call and
an `approve` or a `decide` is refused, each saying how to encrypt; through the codec server the
same turn runs to its end. The worker's start line says it requires encryption."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.conftest import make_settings, new_key, temporal_binary
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.encrypted_stack import OLD_KEY
from tests.support.waiting import until
from turnkeeper.devtools.codec_server import Access, CodecService, running_codec_server
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.stores import open_store
from turnkeeper.worker.settings import Settings

ROOT = Path(__file__).parent.parent


@dataclass
class RequiringWorker:
    task_queue: str
    settings: Settings
    log: Path
    codec_endpoint: str = ""

    @property
    def workspace(self) -> Path:
        return self.settings.workspace


@pytest.fixture
def worker_process(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> Iterator[RequiringWorker]:
    settings = make_settings(tmp_path, f"cli-{uuid.uuid4()}")
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "AGENT_WORKSPACE": str(settings.workspace),
        "TURNKEEPER_DATA_DIR": str(settings.data_dir),
        "TURNKEEPER_ENCRYPTION_KEYS": OLD_KEY,
        "TURNKEEPER_REQUIRE_ENCRYPTION": "1",
    }
    log = tmp_path / "worker.log"
    address = client.service_client.config.target_host
    process = subprocess.Popen(
        [sys.executable, "worker.py", "--address", address, "--task-queue", settings.task_queue],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )
    try:
        yield RequiringWorker(settings.task_queue, settings, log)
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
async def requiring_worker(
    client: Client, worker_process: RequiringWorker
) -> AsyncIterator[RequiringWorker]:
    """The worker, and `turnkeeper codec-server` as an operator runs it beside it: the
    workers' keys and store, on loopback."""
    keyring = Keyring.parse(OLD_KEY)
    service = CodecService.over(open_store(worker_process.settings, keyring), keyring)
    access = Access(frozenset({client.namespace}), None, frozenset())
    async with running_codec_server(service, access, host="127.0.0.1", port=0) as url:
        yield dataclasses.replace(worker_process, codec_endpoint=str(url))


async def cli(
    client: Client, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [temporal_binary("temporal"), *args]
    command += ["--address", client.service_client.config.target_host, "-o", "json"]
    return await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, env=env, timeout=120
    )


async def ok(client: Client, *args: str, env: dict[str, str] | None = None) -> Any:
    done = await cli(client, *args, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def request_of(key: str) -> dict[str, Any]:
    return {
        "agent": {
            "id": "research-assistant",
            "model": "anthropic:claude-sonnet-4-6",
            "system_prompt": f"You are careful. [script:{key}]",
        },
        "task": {"id": f"task-{key}", "input": "Write the summary."},
    }


async def start(client: Client, worker: RequiringWorker, key: str, *codec: str) -> str:
    workflow_id = f"cli-required-{key}"
    await ok(
        client, "workflow", "start", "--type", "AgentTurnWorkflow",
        "--task-queue", worker.task_queue, "--workflow-id", workflow_id,
        "--input", json.dumps(request_of(key)), *codec,
    )  # fmt: skip
    return workflow_id


def refusal_in(text: str, what: str) -> bool:
    return all(
        part in text
        for part in (
            f"{what} reached the worker unencrypted",
            "TURNKEEPER_REQUIRE_ENCRYPTION",
            "--codec-endpoint",
            "TURNKEEPER_ENCRYPTION_KEYS",
        )
    )


async def test_a_plaintext_turn_request_fails_before_any_model_call(
    client: Client, fake_anthropic: FakeAnthropic, requiring_worker: RequiringWorker
) -> None:
    key = new_key()
    fake_anthropic.script(key, [fake.text("Never asked.")])
    workflow_id = await start(client, requiring_worker, key)

    # Read without the codec server, as its sender can: the type and message are plaintext.
    done = await cli(client, "workflow", "result", "--workflow-id", workflow_id)
    assert done.returncode != 0
    assert "EncryptionRequired" in done.stdout + done.stderr
    assert refusal_in(done.stdout + done.stderr, "the turn request"), done.stdout + done.stderr
    assert fake_anthropic.requests_for(key) == []

    started = await until(lambda: asyncio.to_thread(requiring_worker.log.read_text), bool, "log")
    line = next(json.loads(x) for x in started.splitlines() if "worker started" in x)
    assert line["encryption"] == "required" and line["task_queue"] == requiring_worker.task_queue


async def test_through_the_codec_server_only_encrypted_decisions_count(
    client: Client, fake_anthropic: FakeAnthropic, requiring_worker: RequiringWorker
) -> None:
    key = new_key()
    write = ("write_file", {"path": "summary.md", "content": "# Summary\n"})
    fake_anthropic.script(key, [fake.tool_calls(write), fake.text("Saved summary.md.")])
    codec = ("--codec-endpoint", requiring_worker.codec_endpoint)
    workflow_id = await start(client, requiring_worker, key, *codec)

    async def status() -> dict[str, Any]:
        answer = await ok(
            client, "workflow", "query", "--workflow-id", workflow_id, "--name", "status", *codec
        )
        return dict(answer["queryResult"][0])

    [call] = (await until(status, lambda s: s["pending"], "a pending call"))["pending"]
    decision = json.dumps({"call_id": call["call_id"], "approved": True, "approver": "alice"})
    approve = ("workflow", "signal", "--workflow-id", workflow_id, "--name", "approve")

    await ok(client, *approve, "--input", decision)
    refused = (await until(status, lambda s: s["refused_decisions"], "a refusal"))[
        "refused_decisions"
    ]
    assert [(r["signal"], r["call_id"]) for r in refused] == [("approve", call["call_id"])]
    assert refusal_in(refused[0]["reason"], "the approve signal")
    done = await cli(
        client, "workflow", "update", "execute", "--workflow-id", workflow_id,
        "--name", "decide", "--input", decision,
    )  # fmt: skip
    assert done.returncode != 0 and refusal_in(done.stderr, "the decide update"), done.stderr
    assert [p["call_id"] for p in (await status())["pending"]] == [call["call_id"]]

    # The codec endpoint from the environment, as the README offers, for the decision that counts.
    codec_env = {**os.environ, "TEMPORAL_CODEC_ENDPOINT": requiring_worker.codec_endpoint}
    await ok(client, *approve, "--input", decision, env=codec_env)
    result = await ok(client, "workflow", "result", "--workflow-id", workflow_id, *codec)
    assert result["result"]["output"] == "Saved summary.md."
    assert result["result"]["decisions"][0]["approver"] == "alice"
    assert (requiring_worker.workspace / "summary.md").read_text() == "# Summary\n"
