"""Free ports for the servers and workers a test starts, so that none touches a server the
developer may be running on 7233; and a port held by something that never answers."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

from turnkeeper.testing.ports import free_ports

__all__ = ["free_ports", "silent_listener"]


@contextlib.contextmanager
def silent_listener() -> Iterator[int]:
    """A port whose listener accepts connections and never answers: the slowest to tell apart."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]
