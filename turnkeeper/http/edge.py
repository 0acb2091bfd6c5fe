"""What every request of `turnkeeper serve` meets before the app: a bound on the body's size, and
`X-Content-Type-Options: nosniff` on every answer.

Pure ASGI, not Starlette's `BaseHTTPMiddleware`: the size is counted on the `receive` channel
itself, chunk by chunk, so a body without a `Content-Length` (chunked) is refused as soon as it
passes the limit, and nothing downstream ever holds more of it than the limit and one chunk.
"""

from __future__ import annotations

from typing import Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_MAX_BODY_BYTES: Final = 1024 * 1024
NOSNIFF: Final = (b"x-content-type-options", b"nosniff")


def guard_edge(app: ASGIApp, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> ASGIApp:
    """`app` behind the body limit, with `nosniff` on every answer (the 413 included)."""
    return NoSniff(BodyLimit(app, max_body_bytes))


class NoSniff:
    """Adds `X-Content-Type-Options: nosniff` to every HTTP response: a browser never guesses
    a type other than the one sent (a JSON body holding HTML is never run as a page)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_nosniff(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), NOSNIFF]
            await send(message)

        await self.app(scope, receive, send_nosniff)


class BodyLimit:
    """Answers 413 to a request whose body is over `max_bytes`: before reading any of it when
    its `Content-Length` says so, else as soon as the bytes received pass the limit.

    The app never sees the rest. The connection is not closed at once: a client still sending
    would get a reset instead of the 413 (nginx's "lingering close" problem), so uvicorn drops
    the rest of the body as it arrives, for at most the request deadline (`deadline`), which
    then closes the connection.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await _too_large(send, self.max_bytes)
            return
        counted = _CountedBody(receive, send, self.max_bytes)
        await self.app(scope, counted.receive, counted.send)


class _CountedBody:
    """The `receive` and `send` of one request, counting the body as the app reads it.

    Past the limit the app is told the client went away (`http.disconnect`, which it already
    handles: Starlette raises `ClientDisconnect`), the 413 is sent in its place, and whatever
    the app still tries to send is dropped.
    """

    def __init__(self, receive: Receive, send: Send, max_bytes: int) -> None:
        self._receive = receive
        self._send = send
        self._max_bytes = max_bytes
        self._received = 0
        self._answered = False
        self._refused = False

    async def receive(self) -> Message:
        if self._refused:
            return {"type": "http.disconnect"}
        message = await self._receive()
        if message["type"] == "http.request":
            self._received += len(message.get("body", b""))
            if self._received > self._max_bytes:
                self._refused = True
                if not self._answered:
                    self._answered = True
                    await _too_large(self._send, self._max_bytes)
                return {"type": "http.disconnect"}
        return message

    async def send(self, message: Message) -> None:
        if self._refused:
            return
        if message["type"] == "http.response.start":
            self._answered = True
        await self._send(message)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the HTTP parser refuses it before the app runs
    return None


async def _too_large(send: Send, max_bytes: int) -> None:
    body = f'{{"detail": "the request body is over the limit of {max_bytes} bytes"}}'.encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
