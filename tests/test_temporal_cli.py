"""A turn started, approved and read with nothing but the `temporal` CLI and the contract's JSON,
against `python worker.py` whose model is an Anthropic-compatible server at ANTHROPIC_BASE_URL."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.conftest import new_key, temporal_binary
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic

ROOT = Path(__file__).parent.parent


@pytest.fixture
def worker_process(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> Iterator[tuple[str, Path]]:
    task_queue = f"cli-{uuid.uuid4()}"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "AGENT_WORKSPACE": str(workspace),
        "TURNKEEPER_DATA_DIR": str(tmp_path / "data"),
    }
    address = client.service_client.config.target_host
    process = subprocess.Popen(
        [sys.executable, "worker.py", "--address", address, "--task-queue", task_queue],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "worker.log").open("wb"),
    )
    try:
        yield task_queue, workspace
    finally:
        process.terminate()
        process.wait(timeout=30)


async def temporal(client: Client, *args: str) -> Any:
    command = [temporal_binary("temporal"), *args]
    command += ["--address", client.service_client.config.target_host, "-o", "json"]
    done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


async def test_start_approve_and_read_with_the_temporal_cli(
    client: Client, fake_anthropic: FakeAnthropic, worker_process: tuple[str, Path]
) -> None:
    task_queue, workspace = worker_process
    key = new_key()
    fake_anthropic.script(
        key,
        [
            fake.tool_calls(("write_file", {"path": "summary.md", "content": "# Summary\n"})),
            fake.text("Saved summary.md."),
        ],
    )
    request = {
        "agent": {
            "id": "research-assistant",
            "model": "anthropic:claude-sonnet-4-6",
            "system_prompt": f"You are careful. [script:{key}]",
        },
        "task": {"id": "task-42", "input": "Write the summary."},
    }
    workflow_id = f"cli-turn-{key}"

    await temporal(
        client, "workflow", "start", "--type", "AgentTurnWorkflow", "--task-queue", task_queue,
        "--workflow-id", workflow_id, "--input", json.dumps(request),
    )  # fmt: skip
    pending: list[dict[str, Any]] = []
    for _ in range(200):
        answer = await temporal(
            client, "workflow", "query", "--workflow-id", workflow_id, "--name", "status"
        )
        pending = answer["queryResult"][0]["pending"]
        if pending:
            break
        await asyncio.sleep(0.1)
    assert pending and pending[0]["tool"] == "write_file"

    decision = {"call_id": pending[0]["call_id"], "approved": True, "approver": "alice"}
    await temporal(
        client, "workflow", "signal", "--workflow-id", workflow_id, "--name", "approve",
        "--input", json.dumps(decision),
    )  # fmt: skip
    result = await temporal(client, "workflow", "result", "--workflow-id", workflow_id)

    report = result["result"]
    assert report["outcome"] == "completed"
    assert report["output"] == "Saved summary.md."
    assert (workspace / "summary.md").read_text() == "# Summary\n"
    transcript = await temporal(
        client, "workflow", "query", "--workflow-id", workflow_id, "--name", "transcript"
    )
    assert [m["role"] for m in transcript["queryResult"][0]] == ["user", "assistant"] * 2


async def test_a_session_with_nothing_but_the_temporal_cli(
    client: Client, fake_anthropic: FakeAnthropic, worker_process: tuple[str, Path]
) -> None:
    task_queue, _ = worker_process
    key = new_key()
    fake_anthropic.script(key, [fake.text("Hello, Ada."), fake.text("Your name is Ada.")])
    session_id = f"cli-session-{key}"
    request = {
        "agent": {
            "id": "assistant",
            "model": "anthropic:claude-sonnet-4-6",
            "system_prompt": f"You are helpful. [script:{key}]",
        },
        "session_id": session_id,
        "constraints": {"cost_budget_usd": 0.5},
    }
    await temporal(
        client, "workflow", "start", "--type", "AgentSessionWorkflow", "--task-queue", task_queue,
        "--workflow-id", session_id, "--input", json.dumps(request),
    )  # fmt: skip

    async def send(text: str) -> str:
        for _ in range(100):
            done = await asyncio.to_thread(
                subprocess.run,
                [temporal_binary("temporal"), "workflow", "update", "execute",
                 "--workflow-id", session_id, "--name", "send",
                 "--input", json.dumps({"input": text}),
                 "--address", client.service_client.config.target_host, "-o", "json"],
                capture_output=True, text=True,
            )  # fmt: skip
            if done.returncode == 0:
                return json.loads(done.stdout)["result"]["turn_workflow_id"]
            # The session records a turn's end a moment after the turn's result is readable.
            assert "is still running" in done.stderr, done.stderr
            await asyncio.sleep(0.1)
        raise AssertionError("the session stayed busy")

    first = await send("My name is Ada.")
    assert first == f"{session_id}/turn-1"
    result = await temporal(client, "workflow", "result", "--workflow-id", first)
    assert result["result"]["output"] == "Hello, Ada."
    second = await send("What is my name?")
    result = await temporal(client, "workflow", "result", "--workflow-id", second)
    assert result["result"]["output"] == "Your name is Ada."

    sent = fake_anthropic.requests_for(key)[-1].body["messages"]
    assert "My name is Ada." in json.dumps(sent[0]) and "Hello, Ada." in json.dumps(sent[1])
    for _ in range(100):
        status = await temporal(
            client, "workflow", "query", "--workflow-id", session_id, "--name", "status"
        )
        if status["queryResult"][0]["running_turn_id"] is None:
            break
        await asyncio.sleep(0.1)
    status = status["queryResult"][0]
    assert (status["state"], status["turns"]) == ("idle", 2)
    assert 0 < status["cost_usd"] < 0.5
    messages = await temporal(
        client, "workflow", "query", "--workflow-id", session_id, "--name", "messages"
    )
    assert [m["content"][0]["text"] for m in messages["queryResult"][0]] == [
        "My name is Ada.", "Hello, Ada.", "What is my name?", "Your name is Ada.",
    ]  # fmt: skip
    await temporal(
        client, "workflow", "update", "execute", "--workflow-id", session_id, "--name", "close",
        "--input", json.dumps({"reason": "done"}),
    )  # fmt: skip
    final = await temporal(client, "workflow", "result", "--workflow-id", session_id)
    assert final["result"]["state"] == "closed"
