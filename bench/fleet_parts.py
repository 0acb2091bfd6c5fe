"""What the fleet benches share (`bench.fleet`, `bench.tenants`, `bench.http_api`): workers started
as users start them (`python worker.py` processes), and turns of many tenants started at once
with each turn's seconds from its start to its end.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowFailureError
from turnkeeper.contracts.turn import TurnRequest

from turnkeeper.client.turns import start_turn_workflow

ROOT = Path(__file__).resolve().parents[1]
# Only what a user's shell holds that matters to a Python process: nothing of the bench's own
# configuration reaches the worker.
_USER_SHELL = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR")
STARTED_EVENT = "worker started"
START_TIMEOUT_S = 60.0


@dataclass
class TurnTimes:
    """Each tenant's turn times (seconds from its start to its end) and failed turns."""

    times: dict[str, list[float]]
    failed: dict[str, int]


async def run_turns(
    client: Client, queue: str, turns: list[tuple[str, TurnRequest]], starting: int = 16
) -> TurnTimes:
    """Starts every (tenant, request) turn at once, in order, `starting` starts in flight; a turn
    that fails (a tenant over its cap) counts as failed."""
    started: list[tuple[str, float, Any]] = []
    for first in range(0, len(turns), starting):
        batch = turns[first : first + starting]

        async def start(request: TurnRequest) -> Any:
            return await start_turn_workflow(
                client, request, workflow_id=f"t-{uuid.uuid4()}", task_queue=queue
            )

        # The clock of a turn starts when its start is sent, not when the batch's last returns.
        sent = time.monotonic()
        handles = await asyncio.gather(*(start(request) for _, request in batch))
        tenants = [tenant for tenant, _ in batch]
        started += [(tenant, sent, h) for tenant, h in zip(tenants, handles, strict=True)]

    async def one(tenant: str, t0: float, handle: Any) -> tuple[str, float, bool]:
        try:
            await handle.result()
            ok = True
        except WorkflowFailureError:
            ok = False
        return tenant, time.monotonic() - t0, ok

    results = await asyncio.gather(*(one(*s) for s in started))
    times: dict[str, list[float]] = {}
    failed: dict[str, int] = {}
    for tenant, seconds, ok in results:
        times.setdefault(tenant, []).append(seconds)
        failed[tenant] = failed.get(tenant, 0) + (not ok)
    return TurnTimes(times, failed)


def user_environment(**variables: str) -> dict[str, str]:
    """A user's shell environment with the given variables set."""
    base = {name: os.environ[name] for name in _USER_SHELL if name in os.environ}
    return {**base, **variables}


@asynccontextmanager
async def worker_processes(
    address: str,
    queue: str,
    folder: Path,
    env: Mapping[str, str],
    count: int = 1,
    wait: bool = True,
) -> AsyncIterator[list[subprocess.Popen[bytes]]]:
    """`count` `python worker.py --address … --task-queue …` processes polling `queue`, with
    `env` over a user's shell; each logs to `folder/worker-<i>.log`. With `wait`, returns once
    each has logged that it polls. Stopped by SIGTERM (they drain) when the block exits."""
    command = [sys.executable, str(ROOT / "worker.py"), "--address", address, "--task-queue", queue]
    processes: list[subprocess.Popen[bytes]] = []
    logs = [folder / f"worker-{index}.log" for index in range(count)]
    try:
        for log_path in logs:
            processes.append(_spawn(command, folder, user_environment(**env), log_path))
        if wait:
            for process, log_path in zip(processes, logs, strict=True):
                await _until_polling(process, log_path)
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                await asyncio.to_thread(process.wait, 45)
            except subprocess.TimeoutExpired:
                process.kill()


async def _until_polling(process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = _read(log_path)[-3000:]
            raise RuntimeError(f"worker.py exited with {process.returncode}:\n{tail}")
        if any(_event(line) == STARTED_EVENT for line in _read(log_path).splitlines()):
            return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"worker.py did not log {STARTED_EVENT!r} within {START_TIMEOUT_S:g} s")


def _event(line: str) -> str | None:
    """The `event` of a JSON log line (the SDK core's plain lines have none)."""
    if not line.startswith("{"):
        return None
    try:
        return json.loads(line).get("event")
    except json.JSONDecodeError:
        return None


def _spawn(
    command: list[str], folder: Path, env: dict[str, str], log_path: Path
) -> subprocess.Popen[bytes]:
    """The process, its stdout and stderr into one log file (spawning does not block)."""
    folder.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        return subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=log)


def _read(log_path: Path) -> str:
    return log_path.read_text(errors="replace")
