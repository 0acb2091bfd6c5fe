"""A dev-server port held by something that is not a Temporal server, at each entry point that
starts one: it fails within about a second and names the flag or argument of that entry point
which chooses another port. (A Temporal server already on the port is reused: test_devserver.)"""

from __future__ import annotations

import contextlib
import http.server
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import turnkeeper
from tests.cli.test_demo import turnkeeper_command
from tests.support.ports import free_ports
from tests.test_devserver import REPO_ROOT, own_environment
from turnkeeper.devtools.devserver import DevServer, DevServerError, PortFlags

FLAGS = PortFlags("--the-port", "--the-ui-port")


@contextlib.contextmanager
def silent_listener() -> Iterator[int]:
    """A port whose listener accepts connections and never answers: the slowest to tell apart."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@contextlib.contextmanager
def http_listener() -> Iterator[int]:
    """A port held by an ordinary HTTP/1 server, say another project's dev server."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("listener", [silent_listener, http_listener])
async def test_a_grpc_port_held_by_something_else_fails_at_once(
    tmp_path: Path, listener: Callable[[], contextlib.AbstractContextManager[int]]
) -> None:
    (ui_port,) = free_ports(1)
    with listener() as port:
        server = DevServer(tmp_path, port=port, ui_port=ui_port, port_flags=FLAGS)
        started = time.monotonic()
        with pytest.raises(DevServerError) as failure:
            await server.start()
        elapsed = time.monotonic() - started
    assert elapsed < 1.5
    assert f"Port {port} is taken" in str(failure.value)
    assert "choose another port with --the-port." in str(failure.value)
    assert not (tmp_path / "temporal.sqlite").exists()


async def test_a_taken_ui_port_fails_before_the_server_starts(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    with silent_listener() as ui_port:
        server = DevServer(tmp_path, port=port, ui_port=ui_port, port_flags=FLAGS)
        started = time.monotonic()
        with pytest.raises(DevServerError, match=f"port {ui_port} is taken.*--the-ui-port"):
            await server.start()
    assert time.monotonic() - started < 1
    assert server.pid is None


@pytest.mark.parametrize(
    ("port", "ui_port", "message"),
    [
        (0, 8999, "--the-port must be a port number from 1 to 65535, not 0"),
        (7999, 70000, "--the-ui-port must be a port number from 1 to 65535, not 70000"),
        (7999, 7999, "The Web UI needs a port of its own: --the-ui-port is 7999 too"),
    ],
)
def test_impossible_ports_are_refused_by_name(
    tmp_path: Path, port: int, ui_port: int, message: str
) -> None:
    with pytest.raises(DevServerError, match=message):
        DevServer(tmp_path, port=port, ui_port=ui_port, port_flags=FLAGS)


ENTRY_POINTS = {
    "demo": ([*turnkeeper_command(), "demo", "--yes"], "--port", "--ui-port"),
    "worker.py": ([sys.executable, "worker.py", "--dev"], "--dev-port", "--ui-port"),
}


@pytest.mark.parametrize("taken", ["grpc", "ui"])
@pytest.mark.parametrize("entry_point", list(ENTRY_POINTS))
def test_each_command_names_its_own_flag(tmp_path: Path, entry_point: str, taken: str) -> None:
    command, port_flag, ui_port_flag = ENTRY_POINTS[entry_point]
    (free,) = free_ports(1)
    with silent_listener() as busy:
        port, ui_port = (busy, free) if taken == "grpc" else (free, busy)
        env = {**own_environment(tmp_path), "COLUMNS": "300"}
        arguments = [*command, port_flag, str(port), "--ui-port", str(ui_port)]
        started = time.monotonic()
        done = subprocess.run(
            arguments, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60
        )
    # The command's own start-up (imports) and a second at most for the port; the dev server's
    # start-up timeout is 30 s.
    assert time.monotonic() - started < 15
    assert done.returncode == 1, done.stdout + done.stderr
    named = port_flag if taken == "grpc" else ui_port_flag
    assert "is taken" in done.stderr and f"choose another port with {named}." in done.stderr
    assert not (tmp_path / "data" / "temporal.sqlite").exists()


@pytest.mark.parametrize(
    ("taken", "named"), [("grpc", "run_worker(dev_port=…)"), ("ui", "run_worker(ui_port=…)")]
)
async def test_run_worker_names_its_own_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, taken: str, named: str
) -> None:
    monkeypatch.setenv("TURNKEEPER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "workspace"))
    (free,) = free_ports(1)
    with silent_listener() as busy:
        port, ui_port = (busy, free) if taken == "grpc" else (free, busy)
        with pytest.raises(DevServerError, match=rf"choose another port with {re.escape(named)}"):
            await turnkeeper.run_worker(dev=True, dev_port=port, ui_port=ui_port)


async def test_run_worker_refuses_ports_without_dev() -> None:
    with pytest.raises(ValueError, match="need dev=True"):
        await turnkeeper.run_worker(dev_port=7999)
