"""One cached MCP connection per server and worker, checked before use, replaced when gone.

Why a cache rather than a session per call (measured on the demo server, loopback, 2 cores):
a stdio server costs ~840 ms per call when it is started for each call (interpreter start, SDK
import, handshake) against ~2 ms on an open connection; a streamable-HTTP server ~40 ms against
~3 ms, and more over TLS and a real network. A 100-iteration turn would pay that on every call,
and a stateful stdio server (a browser, a REPL) would lose its state between calls.

What a cache must then handle is a connection that died while idle (the server restarted, the
process exited). A connection that has been idle for `probe_after_idle_s`, or whose last call
failed, is checked before it is lent, with a `tools/list` request: a side-effect-free probe, so a
failed probe can be followed by a reconnect and the call without ever running a tool twice
(databases' "pre-ping"). A call is never retried here: a connection lost *during* a call may or
may not have run the tool, and the model is told so.

Each connection is owned by its own background task, because anyio's cancel scopes (which the SDK
uses for its transports) must be entered and exited by the same task, and because a transport
that fails cancels the task that owns it: that must be the owner, never an activity.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation
from turnkeeper.activities.credentials import RotatingCredential
from turnkeeper.activities.mcp.bearer_auth import RotatingBearerAuth
from turnkeeper.activities.mcp.config import HttpServerConfig, McpServerConfig, StdioServerConfig
from turnkeeper.activities.mcp.elicitation import ElicitationRouter
from turnkeeper.activities.mcp.failures import McpUnavailable, describe_unreachable, root_cause

from turnkeeper.ground.logs import get_logger

log = get_logger(__name__)


def _version() -> str:
    try:
        return importlib.metadata.version("turnkeeper")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


_CLIENT_INFO = Implementation(name="turnkeeper", version=_version())
_CLOSE_TIMEOUT_S = 10.0
# Read timeout of the HTTP client beyond a call's own timeout, so that the MCP request timeout
# (which also tells the server to cancel) fires first.
_HTTP_READ_MARGIN_S = 30.0


class McpConnection:
    """An open client session with one server, owned by a background task."""

    def __init__(
        self,
        server: McpServerConfig,
        environ: Mapping[str, str],
        bearer: RotatingCredential | None = None,
    ) -> None:
        self.server = server
        self._environ = environ
        self._bearer = bearer
        self._opened: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._last_ok = time.monotonic()
        self._suspect = False
        # The server's questions during a call go to that call (activities/mcp/elicitation.py).
        self.elicitations = ElicitationRouter()

    @property
    def client(self) -> Client:
        return self._opened.result()

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done() and self._opened.done()

    def idle_s(self) -> float:
        return time.monotonic() - self._last_ok

    @property
    def suspect(self) -> bool:
        return self._suspect

    def succeeded(self) -> None:
        self._last_ok = time.monotonic()
        self._suspect = False

    def failed(self) -> None:
        """The last request failed: check the connection before it is lent again."""
        self._suspect = True

    async def open(self) -> Client:
        """Start the owner task and wait for the handshake.

        Raises:
            McpUnavailable: the server could not be started, reached or greeted in time.
        """
        self._task = asyncio.create_task(self._own(), name=f"mcp-connection-{self.server.name}")
        try:
            # The owner has the same deadline, but its failure surfaces only once the transport
            # has shut down (a stdio server is given seconds to exit): no call waits for that.
            async with asyncio.timeout(self.server.connect_timeout_s):
                return await asyncio.shield(self._opened)
        except TimeoutError:
            raise McpUnavailable(self._too_slow()) from None

    def _too_slow(self) -> str:
        return (
            f"MCP server {self.server.name!r} did not answer within "
            f"{self.server.connect_timeout_s:g} s"
        )

    async def close(self) -> None:
        """Leave the session (a stdio server's process ends with it); never raises."""
        self._closing.set()
        if self._task is None:
            return
        try:
            async with asyncio.timeout(_CLOSE_TIMEOUT_S):
                await asyncio.shield(self._task)
        except TimeoutError:
            self._task.cancel()
        except asyncio.CancelledError:
            self._task.cancel()
            raise

    async def _own(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                # The owner times its own handshake, so that a connection nobody waits for
                # any more (the activity was cancelled) cannot hang on a silent server.
                async with asyncio.timeout(self.server.connect_timeout_s):
                    connected = _connected(
                        self.server, self._environ, self._bearer, self.elicitations
                    )
                    client = await stack.enter_async_context(connected)
                self._opened.set_result(client)
                await self._closing.wait()
        except TimeoutError as err:
            if self._opened.done():
                self._report_loss(err)
            self._fail_opening(McpUnavailable(self._too_slow()))
        except asyncio.CancelledError:
            self._fail_opening(McpUnavailable(f"MCP server {self.server.name!r}: cancelled"))
            raise
        except (Exception, BaseExceptionGroup) as err:
            # A background task: everything is reported here, nothing is raised to no one.
            if not self._opened.done():
                self._fail_opening(McpUnavailable(describe_unreachable(self.server.name, err)))
            else:
                self._report_loss(err)

    def _report_loss(self, err: BaseException) -> None:
        if not self._closing.is_set():
            cause = root_cause(err)
            log.warning("mcp_connection_lost", server=self.server.name, error=type(cause).__name__)

    def _fail_opening(self, err: McpUnavailable) -> None:
        if not self._opened.done():
            self._opened.set_exception(err)
            self._opened.exception()  # retrieved: `open` may have stopped waiting already


@asynccontextmanager
async def _connected(
    server: McpServerConfig,
    environ: Mapping[str, str],
    bearer: RotatingCredential | None,
    elicitations: ElicitationRouter,
) -> AsyncIterator[Client]:
    async with AsyncExitStack() as stack:
        if isinstance(server, StdioServerConfig):
            target: Any = _stdio_parameters(server, environ)
        else:
            http = await stack.enter_async_context(_http_client(server, environ, bearer))
            target = streamable_http_client(server.url, http_client=http)
        # The callback also tells the server that this client answers questions (elicitation).
        client = Client(
            target, client_info=_CLIENT_INFO, cache=None, elicitation_callback=elicitations.callback
        )
        yield await stack.enter_async_context(client)


def _stdio_parameters(
    server: StdioServerConfig, environ: Mapping[str, str]
) -> StdioServerParameters:
    return StdioServerParameters(
        command=server.command[0],
        args=server.command[1:],
        env=server.resolved_env(environ),
        cwd=server.cwd,
    )


def _http_client(
    server: HttpServerConfig, environ: Mapping[str, str], bearer: RotatingCredential | None
) -> httpx2.AsyncClient:
    timeout = httpx2.Timeout(server.connect_timeout_s, read=server.timeout_s + _HTTP_READ_MARGIN_S)
    auth = RotatingBearerAuth(bearer) if bearer is not None else None
    return httpx2.AsyncClient(headers=server.resolved_headers(environ), timeout=timeout, auth=auth)


class McpConnections:
    """The worker's connections, one per server, opened on first use.

    Args:
        servers: the configured servers by name.
        environ: where `${NAME}` references in headers and env are read, when connecting.
        probe_after_idle_s: a connection idle for longer is checked before it is lent.
    """

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        environ: Mapping[str, str] | None = None,
        *,
        probe_after_idle_s: float = 1.0,
    ) -> None:
        self._servers = servers
        self._environ = os.environ if environ is None else environ
        self._probe_after_idle_s = probe_after_idle_s
        self._connections: dict[str, McpConnection] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._retiring: set[asyncio.Task[None]] = set()
        # One per server and worker, outliving its connections: a reconnect sends the token
        # already read, and every connection's 401 renews the same one.
        self._bearers = {
            name: RotatingCredential(server.bearer, f"servers.{name}.bearer")
            for name, server in servers.items()
            if isinstance(server, HttpServerConfig) and server.bearer is not None
        }

    async def borrow(self, server: str) -> McpConnection:
        """A live connection to `server`; report the outcome with `succeeded()` / `failed()`.

        Raises:
            McpUnavailable: the server could not be started or reached.
        """
        async with self._locks.setdefault(server, asyncio.Lock()):
            connection = self._connections.get(server)
            if connection is not None and await self._usable(connection):
                return connection
            if connection is not None:
                self._retire(self._connections.pop(server))
            connection = McpConnection(
                self._servers[server], self._environ, self._bearers.get(server)
            )
            try:
                await connection.open()
            except BaseException:
                self._retire(connection)  # whatever it started is shut down, not abandoned
                raise
            self._connections[server] = connection
            return connection

    async def aclose(self) -> None:
        """Close every connection (stdio servers exit); for worker shutdown and tests."""
        for server in list(self._connections):
            self._retire(self._connections.pop(server))
        await asyncio.gather(*self._retiring, return_exceptions=True)

    async def _usable(self, connection: McpConnection) -> bool:
        if not connection.alive:
            return False
        if not connection.suspect and connection.idle_s() < self._probe_after_idle_s:
            return True
        try:
            async with asyncio.timeout(connection.server.connect_timeout_s):
                await connection.client.list_tools()
        except Exception as err:
            log.info("mcp_reconnect", server=connection.server.name, error=type(err).__name__)
            return False
        connection.succeeded()
        return True

    def _retire(self, connection: McpConnection) -> None:
        # Closed in the background: a call should not wait for a dead server's process to exit.
        task = asyncio.create_task(connection.close())
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)
