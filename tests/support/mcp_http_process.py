"""The demo MCP server (or the tasks server, `TASK_SERVER`) as a streamable-HTTP subprocess on
a loopback port, which a test can kill and start again on the same port (a server restart, as
the worker would see it)."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import psutil
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from tests.fakes import MCP_DEMO_SERVER as DEMO_SERVER

TASK_SERVER = Path(__file__).parent / "mcp_task_server.py"
# An SDK server whose tool asks the person for input (run as a process, never imported).
ASKING_SERVER = Path(__file__).with_name("mcp_asking_server.py")
# Not MCP: a remote A2A agent on a2a-sdk's server, started the same way (`base_url`).
A2A_AGENT = Path(__file__).with_name("a2a_remote_agent.py")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class HttpServerProcess:
    """`script` (the demo server by default) serving streamable HTTP on `port`."""

    def __init__(
        self,
        port: int | None = None,
        script: Path = DEMO_SERVER,
        *,
        bearer_file: Path | None = None,
    ) -> None:
        self.port = port or free_port()
        self.script = script  # another SDK server with the demo's `--http PORT` argument
        # Every request must then carry the token this file holds (`--bearer-file`).
        self.bearer_file = bearer_file
        self._process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, timeout_s: float = 30.0) -> None:
        try:
            await self._start(timeout_s)
        except BaseException:
            await self.kill()
            raise

    async def _start(self, timeout_s: float) -> None:
        assert self._process is None, "the demo server is already running"
        guard = ["--bearer-file", str(self.bearer_file)] if self.bearer_file else []
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(self.script),
            "--http",
            str(self.port),
            *guard,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.returncode is not None:
                raise RuntimeError(f"the demo server exited with {self._process.returncode}")
            # Ready when OUR process listens: a port that answers may be another test's server
            # that took the port between `free_port` and the bind (the suite runs many at once),
            # and a request sent there fails in ways that look like the client's fault.
            if _listens(self._process.pid, self.port):
                return
            await asyncio.sleep(0.05)
        raise TimeoutError(f"the demo server did not listen on port {self.port}")

    async def refusals(self) -> int:
        """How many requests a server run with `bearer_file` has refused with 401."""
        async with httpx2.AsyncClient() as http:
            answer = await http.get(f"http://127.0.0.1:{self.port}/refusals")
        return int(answer.text)

    async def kill(self) -> None:
        if self._process is not None and self._process.returncode is None:
            self._process.kill()
            await self._process.wait()
        self._process = None


def _listens(pid: int, port: int) -> bool:
    try:
        sockets = psutil.Process(pid).net_connections(kind="tcp")
    except psutil.Error:  # exited meanwhile: the caller sees its return code
        return False
    return any(s.status == psutil.CONN_LISTEN and s.laddr.port == port for s in sockets)


async def task_stats(url: str) -> dict[str, Any]:
    """What the tasks server at `url` saw (tasks created, cancelled, polls), asked through an MCP
    client of the test's own."""
    async with Client(streamable_http_client(url)) as mcp:
        result = await mcp.call_tool("task_stats", {})
    [block] = result.content
    assert isinstance(block, TextContent)
    return json.loads(block.text)
