"""Two `python worker.py --dev` in one folder, on different ports, as two real processes: the
second refuses to start a Temporal server on the first one's SQLite file, naming the file, the
process and the port that hold it, and starts nothing. The lock lives as long as the first
server, not its worker: a worker killed with SIGKILL keeps the file locked until its guard has
stopped the server, then frees it with no stale lock left. (Without the lock the second server
starts and both fail each other's writes with SQLITE_BUSY in the shared log.)"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.ports import free_ports
from tests.test_devserver import REPO_ROOT, own_environment, port_is_open
from turnkeeper.devtools.db_lock import DatabaseInUse, hold_database


def worker_command(port: int, ui_port: int) -> list[str]:
    ports = ["--dev-port", str(port), "--ui-port", str(ui_port)]
    return [sys.executable, "worker.py", "--dev", *ports]


async def test_a_second_dev_worker_in_the_same_folder_is_refused_until_the_first_server_ends(
    tmp_path: Path,
) -> None:
    env = own_environment(tmp_path)
    first_port, first_ui, second_port, second_ui = free_ports(4)
    first = await asyncio.create_subprocess_exec(
        *worker_command(first_port, first_ui),
        cwd=REPO_ROOT,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert first.stderr is not None
        while b'"worker started"' not in await asyncio.wait_for(first.stderr.readline(), 90):
            pass

        second = await asyncio.to_thread(
            subprocess.run,
            worker_command(second_port, second_ui),
            cwd=REPO_ROOT,
            env={**env, "COLUMNS": "300"},
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert second.returncode == 1, second.stdout + second.stderr
        database = tmp_path / "data" / "temporal.sqlite"
        message = " ".join(second.stderr.split())
        assert f"Refusing to start a second Temporal dev server on {database}" in message
        assert f"process {first.pid} runs one on it, on port {first_port}" in message
        assert f"start this one on port {first_port}, --dev-port" in message
        assert "TURNKEEPER_DATA_DIR" in message
        assert not port_is_open(second_port) and not port_is_open(second_ui)

        # Killed outright, the worker leaves the server to its guard, which holds the lock
        # until the server has stopped; then the file is free again.
        first.send_signal(signal.SIGKILL)
        await first.wait()
        freed = await asyncio.to_thread(_lock_when_free, database, 60)
        assert not port_is_open(first_port)
        os.close(freed)
    finally:
        if first.returncode is None:
            first.kill()
            await first.wait()


def _lock_when_free(database: Path, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            descriptor = hold_database(database, port=0, ui_port=0)
        except DatabaseInUse:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
            continue
        assert descriptor is not None
        return descriptor
