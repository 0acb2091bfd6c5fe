"""The system tier: the product as users run it.

Every test here starts `python worker.py` (or an application's own script that calls
`turnkeeper.run_worker`) as a process of its own: a fresh interpreter, the README's default
logging (JSON lines at INFO on stderr), an environment that holds only what a user's shell would
hold plus the variables the README documents, and a working directory of its own. It is driven
only through the `temporal` CLI, the `turnkeeper` command and the public Python client, as the
README prints them. Only the model is a fake (an Anthropic- or OpenAI-compatible HTTP server).

Why a tier of its own: the suite's workers run inside the test's interpreter, where modules were
imported long before any sandbox asked for them and loggers sat below INFO. Two features that
passed there broke in the first minute of a real worker (signed approvals, the budget pause).

After every test, the worker's log must hold no failed workflow activation or task and no
error line: a turn that a worker fails to run can look alive from outside.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.conftest import temporal_binary
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.waiting import until

ROOT = Path(__file__).parents[2]
WORKER_SCRIPT = ROOT / "worker.py"
# What a user's shell holds that matters to a Python process; nothing of the test process's
# own configuration (its loggers, its imported modules, its variables) reaches the worker.
_USER_SHELL = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "TURNKEEPER_ENCRYPTION_KEYS")
# Lines of a worker's log that mean a turn did not run as it should, whatever the test saw.
_BROKEN = ("Failed activation", "Failing workflow task", "Traceback")


def user_environment(**variables: str) -> dict[str, str]:
    """A user's shell environment with the given variables set."""
    base = {name: os.environ[name] for name in _USER_SHELL if name in os.environ}
    return {**base, **variables}


@dataclass
class WorkerProcess:
    """A worker started as users start it, and what it wrote to stderr."""

    process: subprocess.Popen[bytes]
    log_path: Path
    task_queue: str
    workspace: Path
    environment: dict[str, str]
    allowed_errors: list[str] = field(default_factory=list)

    def log_lines(self) -> list[dict[str, Any]]:
        """The JSON lines of the log (the dev server's and SDK core's plain lines are skipped)."""
        lines = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    lines.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        return lines

    def events(self, name: str) -> list[dict[str, Any]]:
        return [line for line in self.log_lines() if line.get("event") == name]

    def problems(self) -> list[str]:
        """Lines that say a workflow or the worker broke, less those the test expects."""
        found = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            broken = any(mark in line for mark in _BROKEN) or '"level": "error"' in line
            if broken and not any(allowed in line for allowed in self.allowed_errors):
                found.append(line[:2000])
        return found

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 30) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            # A worker frozen in C code never runs its signal handler; it must not outlive the test.
            self.process.kill()
            return self.process.wait(timeout=timeout_s)


@dataclass
class SystemStack:
    """A dev server, a fake model, and ways to start workers and drive them as users do."""

    client: Client
    fake: FakeAnthropic
    tmp_path: Path
    workers: list[WorkerProcess] = field(default_factory=list)

    @property
    def address(self) -> str:
        return self.client.service_client.config.target_host

    async def start_worker(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        script: Sequence[str] | None = None,
        task_queue: str | None = None,
        wait: bool = True,
    ) -> WorkerProcess:
        """Starts `python worker.py --address … --task-queue …` (or `script`, the command of an
        application's own worker, which gets the address and queue from the environment) in a
        working directory of its own; returns once it polls (at once with `wait=False`, for a
        worker whose log level hides the line that says so). `env` may also override the
        defaults (a second worker of a host shares the first one's workspace and store)."""
        queue = task_queue or f"system-{uuid.uuid4().hex[:10]}"
        folder = self.tmp_path / f"worker-{len(self.workers)}"
        defaults = {
            "ANTHROPIC_BASE_URL": self.fake.base_url,
            "ANTHROPIC_API_KEY": "test-key",
            "AGENT_WORKSPACE": str(folder / "workspace"),
            "TURNKEEPER_DATA_DIR": str(folder / "data"),
            "TEMPORAL_ADDRESS": self.address,
            "AGENT_TASK_QUEUE": queue,
        }
        # A test's own variables win: a test of the key itself sets ANTHROPIC_API_KEY, a second
        # worker shares the first one's workspace and store.
        environment = user_environment(**(defaults | dict(env or {})))
        folder.mkdir(parents=True)
        workspace = Path(environment["AGENT_WORKSPACE"])
        workspace.mkdir(parents=True, exist_ok=True)
        command = list(script) if script else [
            sys.executable, str(WORKER_SCRIPT), "--address", self.address, "--task-queue", queue,
        ]  # fmt: skip
        log_path = folder / "worker.log"
        process = _spawn([*command, *args], folder, environment, log_path)
        worker = WorkerProcess(process, log_path, queue, workspace, environment)
        self.workers.append(worker)
        if wait:
            await self._wait_until_polling(worker)
        return worker

    async def _wait_until_polling(self, worker: WorkerProcess) -> None:
        def started() -> bool:
            if worker.process.poll() is not None:
                raise AssertionError(
                    f"the worker exited with {worker.process.returncode}:\n"
                    + worker.log_path.read_text(errors="replace")[-3000:]
                )
            return bool(worker.events("worker started"))

        async def read() -> bool:
            return started()

        await until(read, bool, "the worker to log 'worker started'")

    async def temporal(self, *args: str, env: Mapping[str, str] | None = None) -> Any:
        """Runs `temporal …` against the stack's server; its JSON output (or None)."""
        command = [temporal_binary("temporal"), *args, "--address", self.address, "-o", "json"]
        done = await run(command, env=env)
        assert done.returncode == 0, f"{' '.join(args)}: {done.stderr}"
        return json.loads(done.stdout) if done.stdout.strip() else None

    async def turnkeeper(
        self, *args: str, worker: WorkerProcess | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Runs the `turnkeeper` command as a user's shell would, with the worker's variables."""
        environment = worker.environment if worker else user_environment(
            TEMPORAL_ADDRESS=self.address
        )  # fmt: skip
        done = await run([temporal_binary("turnkeeper"), *args], env=environment)
        if check:
            assert done.returncode == 0, f"turnkeeper {' '.join(args)}: {done.stderr}"
        return done


def _spawn(
    command: Sequence[str], cwd: Path, env: Mapping[str, str], log_path: Path
) -> subprocess.Popen[bytes]:
    """The process, its stdout and stderr into one log file (spawning does not block)."""
    with log_path.open("wb") as log:
        return subprocess.Popen(list(command), cwd=cwd, env=dict(env), stdout=log, stderr=log)


async def run(
    command: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Runs a command to its end; `stdin` is what a user would type into it."""
    return await asyncio.to_thread(
        subprocess.run,
        list(command),
        capture_output=True,
        text=True,
        env=dict(env) if env is not None else user_environment(),
        cwd=cwd,
        input=stdin,
        timeout=60,
    )


@contextmanager
def _reporting(workers: list[WorkerProcess]) -> Iterator[None]:
    try:
        yield
    finally:
        for worker in workers:
            worker.stop()


@pytest.fixture
async def stack(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> AsyncIterator[SystemStack]:
    stack = SystemStack(client, fake_anthropic, tmp_path)
    with _reporting(stack.workers):
        yield stack
        problems = [line for worker in stack.workers for line in worker.problems()]
        assert problems == [], "the worker's log says a turn broke:\n" + "\n".join(problems)
