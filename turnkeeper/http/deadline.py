"""A deadline for receiving each request, which uvicorn does not have.

uvicorn's `timeout_keep_alive` only covers the idle time between requests, and its timer is
cancelled by the next byte that arrives; nothing bounds the time a request takes to come in. A
client that sends half its headers, or its headers and then a byte of body now and then, holds a
connection (and a task) for ever: the Slowloris attack. No ASGI middleware can help with the
headers, since the app is only called once they are complete. So the bound sits in the HTTP
protocol: uvicorn's h11 protocol, with one timer added (uvicorn takes a protocol class as its
`http` setting).

The timer starts when a connection opens (the first request) or when the first byte of a later
request arrives (a client's pool may keep a connection idle; uvicorn's keep-alive timeout closes
those), and stops once the request is complete, head and body. A request not complete in time is
answered `408 Request Timeout` (unless the app has started answering it) and its connection
closed; the app, if it was reading the body, sees the client go away. A response taking long, an
event stream for instance, is never cut: by then the request is complete.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar, Final

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

DEFAULT_REQUEST_TIMEOUT_S: Final = 30.0

# While the client is in one of these states, a request (head or body) is on its way in.
_RECEIVING: Final = (h11.IDLE, h11.SEND_BODY)
# While the server is in one of these, the app has not started its answer: a 408 may still be sent.
_UNANSWERED: Final = (h11.IDLE, h11.SEND_RESPONSE)


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline of `timeout_s` for receiving each request."""

    timeout_s: ClassVar[float] = DEFAULT_REQUEST_TIMEOUT_S
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._follow()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)

    def _follow(self) -> None:
        """Starts the timer when a request begins to come in; stops it once it is complete
        (or the connection was handed to another protocol, a WebSocket's)."""
        receiving = self.conn.their_state in _RECEIVING
        if receiving and self.transport.get_protocol() is self and not self.transport.is_closing():
            if self._deadline is None:
                self._deadline = self.loop.call_later(self.timeout_s, self._expired)
        else:
            self._stop()

    def _stop(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        self.logger.warning("Request not received within %g s; connection closed.", self.timeout_s)
        if self.conn.our_state in _UNANSWERED:
            self.transport.write(_timeout_response(self.timeout_s))
        if self.conn.their_state is h11.SEND_BODY and self.cycle is not None:
            # The app is reading this body: it sees the client go away, and anything it would
            # still send is dropped (what uvicorn's own connection_lost does, done now so that
            # nothing follows the 408).
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self.transport.close()


def request_deadline_protocol(timeout_s: float) -> type[DeadlineH11Protocol]:
    """The protocol class for `uvicorn.Config(http=…)` with a deadline of `timeout_s`."""
    return type("DeadlineH11Protocol", (DeadlineH11Protocol,), {"timeout_s": timeout_s})


def _timeout_response(timeout_s: float) -> bytes:
    body = f'{{"detail": "the request was not received within {timeout_s:g} s"}}'.encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "x-content-type-options: nosniff\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body
