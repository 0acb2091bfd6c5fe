"""`python worker.py` as an operator runs it: probes and metrics on TURNKEEPER_HEALTH_PORT, and
SIGTERM in the middle of a turn, with a second worker process that carries the turn on."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from temporalio.client import Client
from temporalio.common import VersioningBehavior
from turnkeeper.contracts.names import ACTIVITY_MODEL_CALL, WORKFLOW_TYPE
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import new_key, scripted_request
from tests.deployment.test_upgrade import promoted
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support import history_facts
from tests.support.waiting import until
from turnkeeper.devtools import deployments
from turnkeeper.worker.health import WorkerHealth

ROOT = Path(__file__).parent.parent
MODEL_CALL_S = 10.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class WorkerProcess:
    def __init__(self, process: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.process, self.port, self.log = process, port, log

    async def get(self, path: str) -> tuple[int, str]:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{self.port}{path}") as response,
        ):
            return response.status, await response.text()

    async def readiness_after_sigterm(self) -> tuple[int, str]:
        """The first readiness answer that is no longer 200: a probe sent right after the signal
        may arrive before the process has handled it, which says nothing about draining."""
        for _ in range(100):
            answer = await self.get("/readyz")
            if answer[0] != 200:
                return answer
            await asyncio.sleep(0.05)
        raise AssertionError(f"still ready long after SIGTERM:\n{self.log.read_text()}")

    async def wait_ready(self, timeout_s: float = 60) -> None:
        for _ in range(int(timeout_s / 0.2)):
            try:
                if (await self.get("/readyz"))[0] == 200:
                    return
            except aiohttp.ClientError:
                pass
            assert self.process.poll() is None, self.log.read_text()
            await asyncio.sleep(0.2)
        raise AssertionError(f"worker never ready:\n{self.log.read_text()}")


@pytest.fixture
def worker_processes(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> Iterator[tuple[str, list[WorkerProcess]]]:
    """A task queue and a way to start `python worker.py` processes on it (stopped at the end)."""
    task_queue = f"ops-{uuid.uuid4()}"
    started: list[WorkerProcess] = []
    yield task_queue, started
    for worker in started:
        if worker.process.poll() is None:
            worker.process.kill()
            worker.process.wait(timeout=30)


def start_worker(
    client: Client,
    fake_anthropic: FakeAnthropic,
    tmp_path: Path,
    task_queue: str,
    name: str,
    *flags: str,
) -> WorkerProcess:
    port = free_port()
    (tmp_path / "workspace").mkdir(exist_ok=True)
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "AGENT_WORKSPACE": str(tmp_path / "workspace"),
        # Shared, like a cluster's S3 bucket: the second worker reads what the first stored.
        "TURNKEEPER_DATA_DIR": str(tmp_path / "data"),
        "TURNKEEPER_HEALTH_PORT": str(port),
        "TURNKEEPER_HEALTH_HOST": "127.0.0.1",
        "OTEL_METRICS_EXPORTER": "prometheus",
        # Core's own Prometheus endpoint has a fixed port, which two workers on a host cannot share.
        "TURNKEEPER_TEMPORAL_METRICS": "none",
    }
    log = tmp_path / f"{name}.log"
    process = subprocess.Popen(
        [sys.executable, "worker.py", "--address", client.service_client.config.target_host,
         "--task-queue", task_queue, *flags],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"),
    )  # fmt: skip
    return WorkerProcess(process, port, log)


async def test_sigterm_drains_a_model_call_in_flight_and_another_worker_finishes_the_turn(
    client: Client,
    fake_anthropic: FakeAnthropic,
    tmp_path: Path,
    worker_processes: tuple[str, list[WorkerProcess]],
) -> None:
    task_queue, started = worker_processes
    first = start_worker(client, fake_anthropic, tmp_path, task_queue, "first")
    started.append(first)
    await first.wait_ready()
    assert await first.get("/healthz") == (200, "ok\n")

    key = new_key()
    fake_anthropic.script(
        key,
        [
            fake.slow(fake.tool_calls(("list_files", {"path": "."})), MODEL_CALL_S),
            fake.text("done"),
        ],
    )
    handle = await client.start_workflow(
        WORKFLOW_TYPE,
        scripted_request(key, agent={"tools": ["list_files"]}),
        id=f"turn-{uuid.uuid4()}",
        task_queue=task_queue,
        result_type=AgentReport,
    )
    await fake_anthropic.wait_for_requests(key, 1, timeout_s=30)  # the model call is in flight
    second = start_worker(client, fake_anthropic, tmp_path, task_queue, "second")
    started.append(second)
    await second.wait_ready()

    first.process.send_signal(signal.SIGTERM)
    draining = await first.readiness_after_sigterm()
    exit_code = await asyncio.to_thread(first.process.wait, 60)

    report = await handle.result()
    assert exit_code == 0, first.log.read_text()
    assert draining[0] == 503 and "draining" in draining[1]
    assert report.output == "done"
    # The call in flight finished on the first worker and was not made again by the second.
    assert report.llm_calls == 2
    assert len(fake_anthropic.requests_for(key)) == 2
    # It waited for the call: its one attempt ran and completed on the first worker, per history.
    # The next call ran once, whole, on one worker: mostly the second, but a poll the first had
    # open when SIGTERM came may still hand it that task (the SDK lets a poll in flight finish),
    # which on CI's loaded cores happens; what matters is that nothing ran twice.
    first_call, *later = await history_facts.completed_attempts(handle, ACTIVITY_MODEL_CALL)
    assert first_call == (1, worker_identity(first), worker_identity(first)), first_call
    identities = {worker_identity(first), worker_identity(second)}
    assert later and all(
        attempt == 1 and started_by == completed_by and started_by in identities
        for attempt, started_by, completed_by in later
    ), later

    status, metrics = await second.get("/metrics")
    assert status == 200
    assert "turnkeeper_model_calls_total" in metrics
    assert "turnkeeper_turns_total" in metrics


def worker_identity(worker: WorkerProcess) -> str:
    """The SDK's default identity of a worker process's client: `<pid>@<host>`."""
    return f"{worker.process.pid}@{socket.gethostname()}"


async def test_readiness_says_why_not(client: Client) -> None:
    health = WorkerHealth()
    assert (await health.readiness() or "").startswith("starting")
    health.client = client
    assert await health.readiness() is None
    health.stopping.set()
    assert (await health.readiness() or "").startswith("draining")

    elsewhere = WorkerHealth(client=await Client.connect(
        client.service_client.config.target_host, namespace=f"missing-{uuid.uuid4().hex[:6]}"
    ))  # fmt: skip
    assert "Temporal refused: NOT_FOUND" in (await elsewhere.readiness() or "")


async def test_a_versioned_worker_process_registers_its_version_and_runs_turns(
    client: Client,
    fake_anthropic: FakeAnthropic,
    tmp_path: Path,
    worker_processes: tuple[str, list[WorkerProcess]],
) -> None:
    task_queue, started = worker_processes
    deployment = f"ops-{uuid.uuid4().hex[:8]}"
    worker = start_worker(
        client, fake_anthropic, tmp_path, task_queue, "versioned",
        "--deployment", deployment, "--build-id", "b1",
    )  # fmt: skip
    started.append(worker)
    await worker.wait_ready()
    # The version exists once the server has seen the worker poll.
    await until(lambda: promoted(client, deployment, "b1"), bool, "b1 current", 30)
    status = await deployments.status(client, deployment)
    assert (status.current_build_id, [v.build_id for v in status.versions]) == ("b1", ["b1"])

    key = new_key()
    fake_anthropic.script(key, [fake.text("pinned")])
    handle = await client.start_workflow(
        WORKFLOW_TYPE,
        scripted_request(key),
        id=f"turn-{uuid.uuid4()}",
        task_queue=task_queue,
        result_type=AgentReport,
    )
    assert (await handle.result()).output == "pinned"
    info = (await handle.describe()).raw_description.workflow_execution_info.versioning_info
    assert (info.deployment_version.build_id, info.behavior) == ("b1", VersioningBehavior.PINNED)

    worker.process.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(worker.process.wait, 60) == 0
