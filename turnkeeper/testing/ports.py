"""Free local ports for the servers a test starts, so that none touches a server the developer
may be running on 7233."""

from __future__ import annotations

import contextlib
import socket


def free_ports(count: int) -> list[int]:
    """Distinct ports nobody listens on (held open together so the kernel cannot repeat one)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
