"""Approvals and budgets in `python worker.py`, driven by the `temporal` CLI and the `turnkeeper`
command as the README prints them. The signed approval and the budget pause are the two features
that once passed every in-process test and broke in the first minute of a real worker."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess


def turn_request(key: str, **constraints: Any) -> dict[str, Any]:
    return {
        "agent": {
            "id": "research-assistant",
            "model": "anthropic:claude-sonnet-4-6",
            "system_prompt": f"You are careful. [script:{key}]",
        },
        "task": {"id": f"task-{key}", "input": "Save a summary.", "constraints": constraints},
    }


async def start(stack: SystemStack, worker: WorkerProcess, request: dict[str, Any]) -> str:
    workflow_id = f"turn-{request['task']['id']}"
    await stack.temporal(
        "workflow", "start", "--type", "AgentTurnWorkflow", "--task-queue", worker.task_queue,
        "--workflow-id", workflow_id, "--input", json.dumps(request),
    )  # fmt: skip
    return workflow_id


async def status(stack: SystemStack, workflow_id: str) -> dict[str, Any]:
    answer = await stack.temporal(
        "workflow", "query", "--workflow-id", workflow_id, "--name", "status"
    )
    return answer["queryResult"][0]


async def wait_for_state(stack: SystemStack, workflow_id: str, state: str) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        try:
            return await status(stack, workflow_id)
        except AssertionError as refused:  # not polled yet: the CLI exits non-zero
            return {"state": None, "refused": str(refused)}

    return await until(read, lambda seen: seen["state"] == state, f"{workflow_id} {state}")


async def result(stack: SystemStack, workflow_id: str) -> dict[str, Any]:
    answer = await stack.temporal("workflow", "result", "--workflow-id", workflow_id)
    return answer["result"]


def script_a_write(stack: SystemStack, key: str) -> None:
    stack.fake.script(
        key,
        [
            fake.tool_calls(("write_file", {"path": "summary.md", "content": "# Summary\n"})),
            fake.text("Saved summary.md."),
        ],
    )


async def test_a_plain_approval_through_the_temporal_cli(stack: SystemStack) -> None:
    worker = await stack.start_worker()
    key = new_key()
    script_a_write(stack, key)
    workflow_id = await start(stack, worker, turn_request(key))

    waiting = await wait_for_state(stack, workflow_id, "awaiting_approval")
    call_id = waiting["pending"][0]["call_id"]
    decision = {"call_id": call_id, "approved": True, "reason": "ok", "approver": "alice"}
    await stack.temporal(
        "workflow", "signal", "--workflow-id", workflow_id, "--name", "approve",
        "--input", json.dumps(decision),
    )  # fmt: skip

    report = await result(stack, workflow_id)
    assert (report["outcome"], report["tool_calls"]) == ("completed", 1)
    assert (worker.workspace / "summary.md").read_text() == "# Summary\n"
    decided = worker.events("approval_decided")
    assert [(line["call_id"], line["approved"]) for line in decided] == [(call_id, True)]


def keypair(folder: Path) -> tuple[Path, str]:
    private = folder / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(private)], check=True)
    return private, private.with_suffix(".pub").read_text().strip()


async def test_a_signed_approval_with_the_turnkeeper_command(
    stack: SystemStack, tmp_path: Path
) -> None:
    # The turn that never started: its first task imported cryptography inside the sandbox.
    worker = await stack.start_worker()
    private, public = keypair(tmp_path)
    key = new_key()
    script_a_write(stack, key)
    request = turn_request(key)
    request["agent"]["approvers"] = [{"name": "alice", "public_key": public}]
    workflow_id = await start(stack, worker, request)

    waiting = await wait_for_state(stack, workflow_id, "awaiting_approval")
    call_id = waiting["pending"][0]["call_id"]
    unsigned = await stack.turnkeeper(
        "approve", workflow_id, call_id, "--approver", "alice", worker=worker, check=False
    )
    assert unsigned.returncode != 0  # a keyed turn refuses a decision without a signature
    await stack.turnkeeper(
        "approve", workflow_id, call_id, "--approver", "alice", "--key", str(private),
        worker=worker,
    )  # fmt: skip

    report = await result(stack, workflow_id)
    assert (report["outcome"], report["tool_calls"]) == ("completed", 1)
    assert (worker.workspace / "summary.md").exists()
    decisions = await stack.temporal(
        "workflow", "query", "--workflow-id", workflow_id, "--name", "decisions"
    )
    [decision] = decisions["queryResult"][0]
    assert (decision["approver"], decision["approved"], decision["signed"]) == ("alice", True, True)


async def test_a_paused_budget_extended_with_the_turnkeeper_command(stack: SystemStack) -> None:
    # The turn that failed with TurnInternalError at INFO: its record reused `message`.
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(
        key,
        [
            fake.tool_calls(("list_files", {"path": "."})),
            fake.tool_calls(("list_files", {"path": "."})),
            fake.text("Two looks were enough."),
        ],
    )
    workflow_id = await start(
        stack, worker, turn_request(key, max_tool_interactions=1, on_budget_exhausted="pause")
    )

    paused = await wait_for_state(stack, workflow_id, "awaiting_budget")
    assert paused["budget_request"]["budget"] == "tool_interactions"
    [exhausted] = worker.events("budget_exhausted")
    assert exhausted["budget"] == "tool_interactions"
    await stack.turnkeeper(
        "extend", workflow_id, "--tool-interactions", "2", "--approver", "bob",
        "--reason", "one more look", worker=worker,
    )  # fmt: skip

    report = await result(stack, workflow_id)
    assert (report["outcome"], report["tool_calls"], report["llm_calls"]) == ("completed", 2, 3)
    assert [line["approver"] for line in worker.events("budget_extended")] == ["bob"]
