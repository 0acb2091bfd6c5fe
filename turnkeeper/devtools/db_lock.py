"""One dev server per SQLite file: a lock beside the file (`temporal.sqlite.lock`), held for as
long as the server that uses the file runs.

Two `python worker.py --dev` (or `turnkeeper demo`) started in one folder on different ports
would otherwise start two Temporal servers on the same database: SQLite lets both open it, and
they then fail each other's writes (`database is locked (SQLITE_BUSY)` in the shared log) while
each looks healthy to its worker. The second start is refused instead, with the process and the
port of the first.

An advisory `flock` rather than a pid file: the kernel drops it when the last process holding it
ends, however it ends, so a crash never leaves a stale lock to clean up. The starting process
takes it and hands it to the server's guard (`dev_server_guard`), which lives exactly as long
as the server; so a worker killed while its server still shuts down keeps the file locked until
the server is gone. Windows has no `flock`: there the file is not locked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


class DatabaseInUse(Exception):
    """Another dev server holds the database; what its lock file says about it."""

    def __init__(
        self, lock_path: Path, pid: int | None, port: int | None, ui_port: int | None
    ) -> None:
        super().__init__(f"{lock_path} is held by process {pid}")
        self.lock_path = lock_path
        self.pid = pid
        self.port = port
        self.ui_port = ui_port


def lock_path_of(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".lock")


def hold_database(db_path: Path, *, port: int, ui_port: int) -> int | None:
    """Lock `db_path` for one dev server: the lock file's descriptor (to pass to the process that
    runs the server, and to close once it stopped), or None where locks do not exist.

    Raises:
        DatabaseInUse: Another process holds the lock.
    """
    if fcntl is None:
        return None
    path = lock_path_of(db_path)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = _holder(descriptor)
        os.close(descriptor)
        raise DatabaseInUse(path, *holder) from None
    # Who holds it, for the message the next one gets; the lock, not this text, is what counts.
    os.ftruncate(descriptor, 0)
    holder = {"pid": os.getpid(), "port": port, "ui_port": ui_port}
    os.write(descriptor, json.dumps(holder).encode())
    return descriptor


def _holder(descriptor: int) -> tuple[int | None, int | None, int | None]:
    try:
        written = json.loads(os.pread(descriptor, 4096, 0) or b"{}")
    except (OSError, ValueError):
        written = {}
    if not isinstance(written, dict):
        written = {}
    values = (written.get("pid"), written.get("port"), written.get("ui_port"))
    return tuple(v if isinstance(v, int) else None for v in values)  # type: ignore[return-value]
