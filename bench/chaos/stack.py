"""What the chaos matrix runs on: a dev server on a SQLite file, worker processes, the fake
provider, and cuttable links from the workers to the server and to the provider.

Everything is on loopback and owned by this process, so every fault is one call here: kill -9 a
worker or the server and start it again, cut a link.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aioboto3
from moto.server import ThreadedMotoServer
from temporalio.client import Client

from bench.chaos.proxy import CuttableProxy
from bench.chaos.worker import chaos_settings
from bench.server import BenchServer, free_port
from tests.fakes import MCP_DEMO_SERVER
from tests.fakes.fake_anthropic import FakeAnthropic, start_fake_anthropic
from turnkeeper.client.connection import connect
from turnkeeper.payloads.stores import STORE_URL_ENV
from turnkeeper.worker.settings import MCP_CONFIG_ENV

ROOT = Path(__file__).resolve().parent.parent.parent
# The MCP call timeout of the chaos workers: a hung server costs a turn this long.
MCP_TIMEOUT_S = 3.0


@dataclass
class WorkerProcess:
    """One `python -m bench.chaos.worker` process; `kill()` is kill -9, `start()` a new one."""

    command: list[str]
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    kills: int = 0

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )

    def stop(self) -> None:
        """SIGTERM, as a deploy's rolling restart sends it."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait()
        self.process = None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()
            self.kills += 1
        self.process = None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class ChaosStack:
    server: BenchServer
    fake: FakeAnthropic
    server_link: CuttableProxy
    provider_link: CuttableProxy
    store_link: CuttableProxy
    client: Client
    data_dir: Path
    ledger: Path
    task_queue: str
    workers: list[WorkerProcess] = field(default_factory=list)

    def add_worker(self, provider_timeout_s: float = 8.0) -> WorkerProcess:
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": f"http://{self.provider_link.address}",
            "ANTHROPIC_API_KEY": "chaos-key",
            "CHAOS_PROVIDER_TIMEOUT_S": str(provider_timeout_s),
            "PYTHONPATH": str(ROOT),
        }
        command = [
            sys.executable, "-m", "bench.chaos.worker",
            self.server_link.address, self.task_queue, str(self.data_dir), str(self.ledger),
        ]  # fmt: skip
        worker = WorkerProcess(command, env, self.data_dir / f"worker-{len(self.workers)}.log")
        worker.start()
        self.workers.append(worker)
        return worker

    async def kill_server(self) -> None:
        """kill -9 of the dev server; its SQLite file stays."""
        pid = self.server.pid
        if pid is not None:
            # The server runs under a guard that leads its process group: kill -9 of the group
            # kills the server itself (killing the guard alone would leave the server running).
            os.killpg(pid, signal.SIGKILL)
            await asyncio.to_thread(self.server._process.wait)  # type: ignore[union-attr]
        await self.server.stop()

    async def start_server(self) -> None:
        """The server again, on the same SQLite file and port."""
        await self.server.start()
        if self.server.reused:
            # A server that survived its kill -9 makes this fault a no-op, and the figures lie.
            raise RuntimeError(f"the killed dev server still answers on {self.server.address}")

    def ledger_lines(self) -> list[str]:
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []


# So that no real credentials, profile or endpoint of the machine reach the bench's S3 server.
_DUMMY_AWS = {
    "AWS_ACCESS_KEY_ID": "chaos",
    "AWS_SECRET_ACCESS_KEY": "chaos",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
}
_UNSET_AWS = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_ENDPOINT_URL_S3")


@asynccontextmanager
async def _s3_store() -> AsyncIterator[CuttableProxy]:
    """moto's S3 server, a bucket on it, and a cuttable link to it that this process and every
    worker reach the store through (`AWS_ENDPOINT_URL`, `TURNKEEPER_STORE_URL`)."""
    port = free_port()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    link = CuttableProxy("127.0.0.1", port)
    await link.start()
    saved = dict(os.environ)
    os.environ.update(_DUMMY_AWS)
    for name in _UNSET_AWS:
        os.environ.pop(name, None)
    bucket = f"chaos-{uuid.uuid4().hex[:12]}"
    async with aioboto3.Session().client("s3", endpoint_url=f"http://127.0.0.1:{port}") as s3:
        await s3.create_bucket(Bucket=bucket)
    os.environ["AWS_ENDPOINT_URL"] = f"http://{link.address}"
    os.environ[STORE_URL_ENV] = f"s3://{bucket}/turns"
    try:
        yield link
    finally:
        os.environ.clear()
        os.environ.update(saved)
        await link.stop()
        moto.stop()


def _mcp_config(data_dir: Path) -> Path:
    """The workers' MCP servers: the demo server of `turnkeeper.testing` over stdio, with a short
    call timeout."""
    server = {
        "command": [sys.executable, str(MCP_DEMO_SERVER)],
        "timeout_s": MCP_TIMEOUT_S,
    }
    path = data_dir / "mcp.json"
    path.write_text(json.dumps({"servers": {"demo": server}}))
    return path


@asynccontextmanager
async def chaos_stack(task_queue: str | None = None) -> AsyncIterator[ChaosStack]:
    server = BenchServer()
    await server.start()
    data_dir = server.folder / "data"
    data_dir.mkdir()
    queue = task_queue or f"chaos-{uuid.uuid4().hex[:8]}"
    server_link = CuttableProxy("127.0.0.1", server.port)
    try:
        async with start_fake_anthropic() as fake, _s3_store() as store_link:
            host, port = fake.base_url.removeprefix("http://").split(":")
            provider_link = CuttableProxy(host, int(port))
            await server_link.start()
            await provider_link.start()
            os.environ[MCP_CONFIG_ENV] = str(_mcp_config(data_dir))
            client = await connect(
                address=server.address, from_env=False, settings=chaos_settings(queue, data_dir)
            )
            stack = ChaosStack(
                server, fake, server_link, provider_link, store_link, client, data_dir,
                data_dir / "ledger.txt", queue,
            )  # fmt: skip
            try:
                yield stack
            finally:
                for worker in stack.workers:
                    worker.kill()
                await server_link.stop()
                await provider_link.stop()
    finally:
        with contextlib.suppress(Exception):
            await server.stop()
