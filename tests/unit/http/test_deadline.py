"""The request deadline of `turnkeeper serve`'s HTTP protocol, over raw sockets against uvicorn
in-process: a silent connection, half a head, a dribbled head and a half-sent body are each
answered 408 and closed when the deadline passes; a slow answer to a whole request is never cut.
(tests/system/test_http_edge.py sends the same to a real `turnkeeper serve`.)"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from starlette.types import Receive, Scope, Send

from tests.support.ports import free_ports
from tests.support.waiting import until
from turnkeeper.http.deadline import request_deadline_protocol

TIMEOUT_S = 1.0


class Echo:
    """Reads the whole body, then answers its length (after `pause_s` for `/slow`); notes a
    client that went away mid-body."""

    def __init__(self) -> None:
        self.disconnects = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.disconnects += 1
                return
            size += len(message.get("body", b""))
            more = message.get("more_body", False)
        if scope["path"] == "/slow":
            await asyncio.sleep(TIMEOUT_S * 3)
        body = str(size).encode()
        headers = [(b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def serving(app: Echo) -> AsyncIterator[int]:
    [port] = free_ports(1)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        http=request_deadline_protocol(TIMEOUT_S),
        lifespan="off",
        log_level="warning",
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())

    async def started() -> bool:
        return server.started

    await until(started, bool, "uvicorn to listen")
    try:
        yield port
    finally:
        server.should_exit = True
        await task


async def answer_to(port: int, *parts: bytes, pause_s: float = 0.0) -> tuple[bytes, float]:
    """What the server sends until it closes, after `parts` are sent `pause_s` apart; and how
    long after connecting it closed."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for part in parts:
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(pause_s)
        answer = await asyncio.wait_for(reader.read(), timeout=TIMEOUT_S * 10)
    finally:
        writer.close()
    return answer, time.monotonic() - started


HEAD = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"


async def test_a_request_not_received_in_time_is_408_and_closed() -> None:
    app = Echo()
    async with serving(app) as port:
        cases = {
            "silent": (),
            "half a head": (b"GET / HTTP/1.1\r\nHost: x\r\n",),
            "half a body": (HEAD, b"x" * 10),
        }
        for case, parts in cases.items():
            answer, after_s = await answer_to(port, *parts)
            assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), (case, answer)
            assert b"connection: close" in answer and b"within 1 s" in answer
            assert TIMEOUT_S <= after_s < TIMEOUT_S + 1.0, (case, after_s)
    assert app.disconnects == 1  # the half-sent body: the app saw the client go away


async def test_bytes_dribbled_in_do_not_move_the_deadline() -> None:
    dribble = [bytes([b]) for b in b"GET / HTT"]  # a byte every tenth of the deadline
    async with serving(Echo()) as port:
        answer, after_s = await answer_to(port, *dribble, pause_s=TIMEOUT_S / 10)
    assert answer.startswith(b"HTTP/1.1 408")
    # Closed a deadline after connecting, not a deadline after the last byte (0.9 + 1 s).
    assert after_s < TIMEOUT_S * 1.5


async def test_a_whole_request_is_answered_however_long_the_answer_takes() -> None:
    async with serving(Echo()) as port:
        head = b"POST /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 3\r\n"
        request = head + b"\r\nabc"
        answer, after_s = await answer_to(port, request)
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"\r\n\r\n3")
    assert after_s >= TIMEOUT_S * 3


async def test_the_next_request_on_a_kept_connection_has_its_own_deadline() -> None:
    async with serving(Echo()) as port:
        first = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab"
        # The first request is answered; the second stops after its head and times out.
        answer, _ = await answer_to(port, first, HEAD, pause_s=TIMEOUT_S * 0.8)
    assert answer.startswith(b"HTTP/1.1 200") and b"\r\n\r\n2HTTP/1.1 408" in answer
