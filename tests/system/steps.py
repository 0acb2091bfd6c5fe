"""Steps the system tests share beyond `conftest.py`: a user's Python client, the `temporal` CLI's
updates (answered or refused), `turnkeeper` commands fed on stdin or left running, waits on the
`status` query, and what the model was sent.

The turn-level steps (`start`, `status`, `wait_for_state`, `result`) are those of
`test_approvals_and_budgets.py`; they are re-exported here so that every module reads alike."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from temporalio.client import Client

import turnkeeper
from tests.conftest import temporal_binary
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess, run
from tests.system.test_approvals_and_budgets import (
    result,
    start,
    status,
    turn_request,
    wait_for_state,
)

__all__ = [
    "HALF_A_DOLLAR",
    "LIST",
    "PRICEY",
    "connect_as_user",
    "model_saw",
    "refused_update",
    "result",
    "start",
    "start_turnkeeper",
    "status",
    "tool_results",
    "turn_request",
    "turnkeeper_with_input",
    "update",
    "wait_for_pending",
    "wait_for_state",
    "wait_for_status",
    "write",
]

LIST = ("list_files", {"path": "."})
# $0.01 an input token, $0.1 an output token: a call of 20 in and 3 out costs $0.50.
PRICEY = {"input_per_mtok": 10_000.0, "output_per_mtok": 100_000.0}
HALF_A_DOLLAR = {"input_tokens": 20, "output_tokens": 3}

# What `turnkeeper.connect()` reads from a user's environment to reach the worker's server and
# content store (a client must name the store its workers write: README, Configuration).
_CLIENT_VARIABLES = ("TEMPORAL_ADDRESS", "AGENT_TASK_QUEUE", "TURNKEEPER_DATA_DIR")


def write(path: str, content: str) -> tuple[str, dict[str, str]]:
    """A `write_file` call of the built-in tools (it needs approval)."""
    return ("write_file", {"path": path, "content": content})


async def connect_as_user(worker: WorkerProcess, monkeypatch: pytest.MonkeyPatch) -> Client:
    """`turnkeeper.connect()` in a process whose environment is the worker's, as the README's
    "Using turnkeeper from Python" runs it next to `python worker.py`."""
    for name in _CLIENT_VARIABLES:
        monkeypatch.setenv(name, worker.environment[name])
    return await turnkeeper.connect()


async def update(stack: SystemStack, workflow_id: str, name: str, payload: Any) -> Any:
    """`temporal workflow update execute`: the update's answer as the CLI prints it."""
    answer = await stack.temporal(
        "workflow", "update", "execute", "--workflow-id", workflow_id, "--name", name,
        "--input", json.dumps(payload),
    )  # fmt: skip
    return answer["result"]


async def refused_update(stack: SystemStack, workflow_id: str, name: str, payload: Any) -> str:
    """`temporal workflow update execute` that the workflow refuses: what the CLI says."""
    command = [
        temporal_binary("temporal"), "workflow", "update", "execute", "--workflow-id", workflow_id,
        "--name", name, "--input", json.dumps(payload), "--address", stack.address,
    ]  # fmt: skip
    done = await run(command)
    assert done.returncode != 0, done.stdout
    return done.stderr


async def turnkeeper_with_input(
    worker: WorkerProcess, stdin: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """A `turnkeeper` command typed at a terminal: `stdin` is what the user types."""
    command = [temporal_binary("turnkeeper"), *args]
    return await run(command, env=worker.environment, stdin=stdin)


async def wait_for_status(
    stack: SystemStack, workflow_id: str, done: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    """The `status` query (through the `temporal` CLI) once `done` holds for it."""

    async def read() -> dict[str, Any] | None:
        try:
            return await status(stack, workflow_id)
        except AssertionError:  # not polled yet: the CLI exits non-zero
            return None

    reading = await until(read, lambda seen: seen is not None and done(seen), what)
    assert reading is not None
    return reading


async def wait_for_pending(stack: SystemStack, workflow_id: str, count: int) -> dict[str, Any]:
    """The `status` query once `count` calls wait for a human or the caller (the CLI prints
    an empty list as null)."""
    return await wait_for_status(
        stack, workflow_id, lambda seen: len(seen["pending"] or []) >= count, f"{count} pending"
    )


async def start_turnkeeper(worker: WorkerProcess, *args: str) -> asyncio.subprocess.Process:
    """A `turnkeeper` command left running in a terminal of its own (e.g. `run` following its
    turn); read what it printed with `communicate()`."""
    return await asyncio.create_subprocess_exec(
        temporal_binary("turnkeeper"), *args, env=worker.environment,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


def model_saw(stack: SystemStack, key: str) -> list[dict[str, Any]]:
    """The messages of the model's latest request for script `key`."""
    return stack.fake.requests_for(key)[-1].body["messages"]


def tool_results(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results of one user message, as the model got them."""
    return [block for block in message["content"] if block.get("type") == "tool_result"]
