"""An encrypted deployment as `python worker.py --dev` builds it: the dev stack (a codec server,
then a dev server with a SQLite file and a Web UI that decodes through that codec server), a
client and a worker with the same keys, and a content store that encrypts."""

from __future__ import annotations

import dataclasses
import socket
import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from turnkeeper.contracts.names import WORKFLOW_TYPE
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import make_settings, running_worker
from tests.fakes.fake_anthropic import FakeAnthropic
from turnkeeper.client.connection import connect
from turnkeeper.devtools.dev_stack import dev_stack
from turnkeeper.devtools.devserver import DevServer
from turnkeeper.payloads.content_store import ContentStore
from turnkeeper.payloads.keyring import Keyring, new_key_entry
from turnkeeper.payloads.stores import open_store
from turnkeeper.worker.settings import Settings

OLD_KEY = new_key_entry("old-key")
NEW_KEY = new_key_entry("new-key")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Deployment:
    """Clients and workers of one set of keys over one store folder, on a shared dev server."""

    server: DevServer
    client: Client
    store: ContentStore
    settings: Settings
    fake: FakeAnthropic

    @asynccontextmanager
    async def worker(self, task_queue: str | None = None) -> AsyncIterator[str]:
        """A worker on `task_queue` (default: a fresh one); yields the queue."""
        queue = task_queue or f"tq-{uuid.uuid4()}"
        settings = _with_queue(self.settings, queue)
        async with running_worker(self.client, settings, self.fake, store=self.store):
            yield queue

    async def start(self, request: dict[str, Any], task_queue: str) -> WorkflowHandle:
        return await self.client.start_workflow(
            WORKFLOW_TYPE,
            request,
            id=f"turn-{uuid.uuid4()}",
            task_queue=task_queue,
            result_type=AgentReport,
        )


def _with_queue(settings: Settings, queue: str) -> Settings:
    return dataclasses.replace(settings, task_queue=queue)


async def deployment(
    server: DevServer, root: Path, keys: str, fake: FakeAnthropic, *, store_dir: Path | None = None
) -> Deployment:
    """A client (and the means to run workers) with `keys` over the store under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    settings = make_settings(root, "unused")
    if store_dir is not None:
        settings = dataclasses.replace(settings, store_dir=store_dir)
    keyring = Keyring.parse(keys)
    store = open_store(settings, keyring)
    client = await connect(
        address=server.address,
        namespace=server.namespace,
        from_env=False,
        store=store,
        keyring=keyring,
    )
    return Deployment(server, client, store, settings, fake)


@asynccontextmanager
async def encrypted_dev_stack(root: Path, keys: str) -> AsyncIterator[DevServer]:
    """The dev stack of `worker.py --dev` on free ports, its codec server over `root`'s store."""
    settings = make_settings(root, "unused")
    keyring = Keyring.parse(keys)
    async with dev_stack(
        root / "server",
        open_store(settings, keyring),
        keyring,
        port=free_port(),
        ui_port=free_port(),
    ) as server:
        yield server


def occurrences(needles: Iterable[str], files: Iterable[Path]) -> dict[str, int]:
    """How often each needle's UTF-8 bytes occur in the files, read whole."""
    counts = dict.fromkeys(needles, 0)
    for path in files:
        if not path.is_file():
            continue
        data = path.read_bytes()
        for needle in counts:
            counts[needle] += data.count(needle.encode())
    return counts


def server_files(server: DevServer) -> list[Path]:
    """The dev server's SQLite database with its write-ahead log and shared memory."""
    return sorted(server.data_dir.glob(f"{server.db_path.name}*"))


def store_files(store_dir: Path) -> list[Path]:
    return sorted(p for p in store_dir.rglob("*") if p.is_file())
