"""A waiting turn outlives its Temporal server: the dev server on its SQLite file (the embedded
default's), killed with -9 while the turn waits on its timer, and started again on the same
file and port. The worker reconnects by itself, the timer fires as if nothing happened, and
each model call is asked once."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from pathlib import Path

from temporalio.client import Client
from turnkeeper.contracts.names import WORKFLOW_TYPE
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import make_settings, new_key, running_worker
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.workflows.test_waits import results, waiting_request, waiting_status
from turnkeeper.devtools.devserver import DevServer
from turnkeeper.payloads.content_store import ContentStore
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.payload_storage import turn_data_converter
from turnkeeper.testing.ports import free_ports

# Long enough that the kill and the restart both fall inside the wait.
WAIT_S = 8


async def _kill_9(server: DevServer) -> None:
    """kill -9 of the server; its SQLite file stays. The server runs under a guard that leads
    its process group: the group's kill reaches the server itself."""
    pid = server.pid
    assert pid is not None, "the test's server was reused, not started: the kill would be a no-op"
    os.killpg(pid, signal.SIGKILL)
    await asyncio.to_thread(server._process.wait)  # type: ignore[union-attr]
    await server.stop()


async def test_a_wait_outlives_its_server_killed_and_restarted_on_its_database(
    fake_anthropic: FakeAnthropic, payload_store: ContentStore, keyring: Keyring, tmp_path: Path
) -> None:
    port, ui_port = free_ports(2)
    server = DevServer(tmp_path / "temporal", port=port, ui_port=ui_port)
    await server.start()
    try:
        client = await Client.connect(
            server.address, data_converter=turn_data_converter(payload_store, keyring)
        )
        key = new_key()
        fake_anthropic.script(
            key,
            [
                fake.tool_calls(("wait", {"seconds": WAIT_S, "reason": "the batch settles"})),
                fake.text("The batch settled."),
            ],
        )
        settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
        async with running_worker(client, settings, fake_anthropic):
            handle = await client.start_workflow(
                WORKFLOW_TYPE,
                waiting_request(key),
                id=f"turn-{uuid.uuid4()}",
                task_queue=settings.task_queue,
                result_type=AgentReport,
            )
            await waiting_status(handle)
            await _kill_9(server)
            await asyncio.sleep(1.0)
            await server.start()
            assert not server.reused, "the killed server still answered"
            report = await asyncio.wait_for(handle.result(), 120)
    finally:
        await server.stop()

    assert report.outcome == "completed" and report.output == "The batch settled."
    [waited] = results(report)
    assert not waited.is_error and waited.text().startswith("Waited until ")
    assert report.duration_ms >= WAIT_S * 1000
    # Each model call asked once: the restart replayed nothing that bills.
    assert len(fake_anthropic.requests_for(key)) == 2
