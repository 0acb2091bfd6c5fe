"""Free ports for the servers and workers a test starts, so that none touches a server the
developer may be running on 7233; and a port held by something that never answers."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator


def free_ports(count: int) -> list[int]:
    """Distinct ports nobody listens on (held open together so the kernel cannot repeat one)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


@contextlib.contextmanager
def silent_listener() -> Iterator[int]:
    """A port whose listener accepts connections and never answers: the slowest to tell apart."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]
