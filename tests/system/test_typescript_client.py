"""The TypeScript client of `examples/typescript/` against `python worker.py`: a turn started,
read, decided and waited for with `@temporalio/client` and turnkeeper's reference alone, with
payloads in plain JSON, encrypted by the example's own codec (written from the reference's
payload format), and encrypted by a `turnkeeper codec-server` the client holds no key for."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.support.typescript_example import EXAMPLE, built_cli
from tests.system.conftest import SystemStack, WorkerProcess, user_environment
from tests.system.driving import agent, history, metadata, payloads, readable, task
from tests.system.test_approvals_and_budgets import script_a_write
from tests.system.test_encryption import REFERENCE, codec_server, keyed_worker

CODEC_TOKEN = "tok-typescript"


@asynccontextmanager
async def client_environment(
    stack: SystemStack, worker: WorkerProcess, codec: str, folder: Path
) -> AsyncIterator[dict[str, str]]:
    """The variables a user's shell gives the example for `codec`: the worker's keys for its
    own codec, a codec server's address and token (and no key) for the remote one."""
    base = user_environment(TEMPORAL_ADDRESS=stack.address, AGENT_TASK_QUEUE=worker.task_queue)
    base.pop("TURNKEEPER_ENCRYPTION_KEYS", None)
    if codec == "plain":
        yield base
    elif codec == "own":
        yield {
            **base,
            "TURNKEEPER_ENCRYPTION_KEYS": worker.environment["TURNKEEPER_ENCRYPTION_KEYS"],
        }
    else:
        async with codec_server(worker, folder, TURNKEEPER_CODEC_TOKEN=CODEC_TOKEN) as url:
            auth = f"Bearer {CODEC_TOKEN}"
            yield {**base, "TEMPORAL_CODEC_ENDPOINT": url, "TEMPORAL_CODEC_AUTH": auth}


async def typescript(env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`node examples/typescript/dist/cli.js ARGS` in a process of its own."""
    command = [*built_cli(), *args]
    return await asyncio.to_thread(
        subprocess.run, command, env=dict(env), capture_output=True, text=True, timeout=90
    )


async def answer(env: Mapping[str, str], *args: str) -> Any:
    done = await typescript(env, *args)
    assert done.returncode == 0, f"{' '.join(args)}: {done.stderr}"
    return json.loads(done.stdout)


async def refusal(env: Mapping[str, str], *args: str) -> dict[str, Any]:
    done = await typescript(env, *args)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    return json.loads(done.stderr)["error"]


def local_activity_marker(payload: dict[str, Any]) -> bool:
    """The SDK's record of a local activity (its sequence number, type and times), which it
    writes in plain JSON past the codec, as it writes a patch's id; the result is encrypted."""
    if metadata(payload) != "json/plain":
        return False
    fields = json.loads(base64.b64decode(payload["data"]))
    return isinstance(fields, dict) and {"seq", "activity_id", "activity_type"} <= set(fields)


@pytest.mark.parametrize("codec", ["plain", "own", "codec-server"])
async def test_a_typescript_client_starts_reads_decides_and_waits_for_a_turn(
    stack: SystemStack, tmp_path: Path, codec: str
) -> None:
    if codec == "plain":
        worker, key_id = await stack.start_worker(), None
    else:
        worker, key_id = await keyed_worker(stack)
    key = new_key()
    script_a_write(stack, key)
    phrase = f"Save a summary of {key}."
    request = tmp_path / "request.json"
    request.write_text(
        json.dumps({"agent": agent(key, approvers=["alice"]), "task": task(key, phrase)})
    )

    async with client_environment(stack, worker, codec, tmp_path) as env:
        workflow_id = (await answer(env, "start", "--request", str(request)))["workflow_id"]
        waiting = await answer(env, "wait", workflow_id, "--state", "awaiting_approval")
        [call] = waiting["pending"]
        decide = ("decide", workflow_id, "--approve")
        unknown = await refusal(env, *decide, "--call", "no-such-call", "--approver", "alice")
        stranger = await refusal(env, *decide, "--call", call["call_id"], "--approver", "mallory")
        after_refusals = await answer(env, "status", workflow_id)
        decided = await answer(env, *decide, "--call", call["call_id"], "--approver", "alice")
        report = await answer(env, "result", workflow_id)

    assert workflow_id.startswith("turn-system-agent-")
    assert (call["tool"], call["kind"], call["input"]["path"]) == (
        "write_file",
        "approval",
        "summary.md",
    )
    # A refusal reaches TypeScript by its named type, and decides nothing.
    assert unknown["type"] == stranger["type"] == "DecisionRefused"
    assert "no-such-call" in unknown["message"] and "'mallory'" in stranger["message"]
    assert after_refusals["state"] == "awaiting_approval"
    assert [p["call_id"] for p in after_refusals["pending"]] == [call["call_id"]]
    assert [(d["call_id"], d["approved"], d["approver"]) for d in decided["decisions"]] == [
        (call["call_id"], True, "alice")
    ]
    assert (report["outcome"], report["output"], report["tool_calls"]) == (
        "completed", "Saved summary.md.", 1,
    )  # fmt: skip
    assert [d["approver"] for d in report["decisions"]] == ["alice"]
    assert (worker.workspace / "summary.md").read_text() == "# Summary\n"

    shown = await history(stack, workflow_id)
    assert "mallory" not in readable(shown)  # a refused update leaves no history
    sealed = [
        p
        for p in payloads(shown)
        if metadata(p, "messageType") != REFERENCE and not local_activity_marker(p)
    ]
    if key_id is None:
        assert phrase in readable(shown)
        assert "binary/encrypted" not in {metadata(p) for p in sealed}
    else:
        # What TypeScript sent (the request, the decisions) is ciphertext like the rest.
        assert phrase not in readable(shown) and "alice" not in readable(shown)
        assert {metadata(p) for p in sealed} == {"binary/encrypted"}
        assert {metadata(p, "encryption-key-id") for p in sealed} == {key_id}


async def test_the_readme_s_run_command_approves_each_call_and_prints_the_report(
    stack: SystemStack, tmp_path: Path
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(
        key,
        [
            fake.tool_calls(("write_file", {"path": "notes.md", "content": "hello\n"})),
            fake.tool_calls(("write_file", {"path": "more.md", "content": "again\n"})),
            fake.text("Wrote both notes."),
        ],
    )
    # The README's request as it is, the fake's script named in its task.
    request = json.loads((EXAMPLE / "request.json").read_text())
    request["task"]["input"] += f" [script:{key}]"
    (tmp_path / "request.json").write_text(json.dumps(request))

    async with client_environment(stack, worker, "plain", tmp_path) as env:
        ran = await answer(
            env, "run", "--request", str(tmp_path / "request.json"), "--approver", "alice"
        )

    report = ran["report"]
    assert ran["workflow_id"].startswith("turn-note-taker-")
    assert (report["outcome"], report["output"], report["tool_calls"]) == (
        "completed", "Wrote both notes.", 2,
    )  # fmt: skip
    assert [(d["approver"], d["approved"]) for d in report["decisions"]] == [("alice", True)] * 2
    assert (worker.workspace / "more.md").read_text() == "again\n"
