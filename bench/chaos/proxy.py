"""A loopback TCP proxy that can cut the network between workers and the server.

Hand-written because Toxiproxy's server is not installable here and the cut we need is small:
`cut(seconds)` resets every open connection and holds new ones unanswered (accepted, never
forwarded) until it ends, which is what a partitioned network looks like to a gRPC client: its
streams break, its reconnects hang until their own timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib


class CuttableProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._links: set[asyncio.StreamWriter] = set()
        self._restored = asyncio.Event()
        self._restored.set()
        self.port = 0
        self.cuts = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for link in list(self._links):
            link.transport.abort()

    async def cut(self, seconds: float, *, refuse: bool = False) -> None:
        """Drops every connection and, for `seconds`, holds new ones unanswered or (`refuse`)
        refuses them, as a host that is down does."""
        self.cuts += 1
        self._restored.clear()
        if refuse and self._server is not None:
            self._server.close()
        for link in list(self._links):
            link.transport.abort()
        await asyncio.sleep(seconds)
        if refuse:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self._restored.set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._links.add(writer)
        try:
            await self._restored.wait()
            try:
                up_reader, up_writer = await asyncio.open_connection(*self._target)
            except OSError:
                return
            self._links.add(up_writer)
            try:
                await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
            finally:
                self._links.discard(up_writer)
                up_writer.transport.abort()
        finally:
            self._links.discard(writer)
            writer.transport.abort()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    sink.transport.abort()
