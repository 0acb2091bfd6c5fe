"""Stopping a worker that started a dev server, the ways users stop one: Ctrl-C or SIGTERM while
its output goes into a pipe whose reader is gone (`python worker.py --dev | tee log` once a Ctrl-C
killed `tee`), and SIGKILL. The worker exits promptly, and its dev server never outlives it.

Each test runs the worker as its own process on free ports, as a user does."""

from __future__ import annotations

import itertools
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.support.ports import free_ports
from tests.test_devserver import REPO_ROOT, own_environment, port_is_open

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

# An application's worker script whose log lines go to stdout, as structlog's defaults print them:
# the worst case for a stop handler that logs.
APPLICATION_WORKER = """
import asyncio, sys, structlog, turnkeeper
structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stdout))
ports = {"dev_port": int(sys.argv[1]), "ui_port": int(sys.argv[2])}
asyncio.run(turnkeeper.run_worker(dev=True, **ports))
turnkeeper.exit_without_teardown(0)
"""


def start_worker(how: str, tmp_path: Path, port: int, ui_port: int) -> subprocess.Popen[bytes]:
    """The worker with stdout and stderr into one pipe, as `2>&1 | tee log` has them."""
    ports = [str(port), str(ui_port)]
    commands = {
        "worker.py": [sys.executable, "worker.py", "--dev", "--dev-port", ports[0], "--ui-port"],
        "run_worker": [sys.executable, "-c", APPLICATION_WORKER, ports[0]],
    }
    return subprocess.Popen(
        [*commands[how], ports[1]],
        cwd=REPO_ROOT,
        env=own_environment(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def wait_until_started(worker: subprocess.Popen[bytes]) -> None:
    assert worker.stdout is not None
    seen = []
    for line in worker.stdout:
        seen.append(line.decode(errors="replace"))
        if "worker started" in seen[-1]:
            return
    raise AssertionError("the worker ended before it started:\n" + "".join(seen))


def dev_servers_on(port: int) -> list[psutil.Process]:
    """The `temporal server start-dev` processes serving `port`."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        words = process.info["cmdline"] or []
        if "start-dev" in words and ("--port", str(port)) in itertools.pairwise(words):
            found.append(process)
    return found


def wait_for_no_dev_server(port: int, ui_port: int, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while dev_servers_on(port) or port_is_open(port) or port_is_open(ui_port):
        assert time.monotonic() < deadline, f"a dev server still holds {port}/{ui_port}"
        time.sleep(0.1)


def stop_if_running(worker: subprocess.Popen[bytes], port: int) -> None:
    if worker.poll() is None:
        worker.kill()
        worker.wait()
    for leftover in dev_servers_on(port):
        leftover.kill()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("how", ["worker.py", "run_worker"])
def test_a_stop_signal_stops_a_worker_whose_output_pipe_is_broken(
    tmp_path: Path, how: str, signum: signal.Signals
) -> None:
    port, ui_port = free_ports(2)
    worker = start_worker(how, tmp_path, port, ui_port)
    try:
        wait_until_started(worker)
        assert dev_servers_on(port)
        assert worker.stdout is not None
        worker.stdout.close()  # the reader is gone: every later line meets a broken pipe
        worker.send_signal(signum)
        code = worker.wait(timeout=30)
    finally:
        stop_if_running(worker, port)
    assert code == 0
    # Gone with the worker; the margin is for a loaded machine (parallel test processes), where
    # the last listening socket was seen to close a few milliseconds past one second.
    wait_for_no_dev_server(port, ui_port, within_s=5)


@pytest.mark.parametrize("how", ["worker.py", "run_worker"])
def test_a_killed_worker_takes_its_dev_server_along(tmp_path: Path, how: str) -> None:
    port, ui_port = free_ports(2)
    worker = start_worker(how, tmp_path, port, ui_port)
    try:
        wait_until_started(worker)
        assert dev_servers_on(port)
        worker.kill()
        worker.wait()
        wait_for_no_dev_server(port, ui_port, within_s=10)
    finally:
        stop_if_running(worker, port)
