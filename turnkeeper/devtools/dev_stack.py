"""The embedded stack of `python worker.py --dev` and `turnkeeper demo`: a codec server, then a
Temporal dev server whose Web UI asks that codec server to decode payloads, so the UI shows
decrypted content and what external-storage references stand for, with no setup."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from turnkeeper.devtools.devserver import (
    DEFAULT_NAMESPACE,
    DEFAULT_PORT,
    DEFAULT_PORT_FLAGS,
    DevServer,
    PortFlags,
)
from turnkeeper.payloads.content_store import ContentStore
from turnkeeper.payloads.keyring import Keyring


@contextlib.asynccontextmanager
async def dev_stack(
    data_dir: Path,
    store: ContentStore,
    keyring: Keyring,
    *,
    port: int = DEFAULT_PORT,
    ui_port: int | None = None,
    namespace: str = DEFAULT_NAMESPACE,
    codec_port: int = 0,
    port_flags: PortFlags = DEFAULT_PORT_FLAGS,
) -> AsyncIterator[DevServer]:
    """A running dev server (started, or reused when one already listens on `port`) until the
    block ends. A reused server keeps the codec endpoint it was started with.

    Args:
        codec_port: Where the codec server listens, on loopback (0: any free port; the dev server
            is told which).
        port_flags: How the caller's user chooses `port` and `ui_port`, for the error when one
            is taken.
    """
    server = DevServer(
        data_dir, port=port, ui_port=ui_port, namespace=namespace, port_flags=port_flags
    )
    if await server.already_running():
        async with server:
            yield server
        return
    # Imported when a server is started here, not with the worker: a deployed worker, which never
    # starts one, should not hold aiohttp (10 MiB) for it.
    from turnkeeper.devtools.codec_server import (
        DEFAULT_CODEC_HOST,
        Access,
        CodecService,
        running_codec_server,
    )

    # Loopback only and no token: the UI of the embedded server cannot send one, and nothing
    # beyond this machine reaches it.
    access = Access(
        namespaces=frozenset({namespace}),
        token=None,
        ui_origins=frozenset(
            f"http://{host}:{server.ui_port}" for host in ("localhost", "127.0.0.1", server.ip)
        ),
    )
    service = CodecService.over(store, keyring)
    async with running_codec_server(
        service, access, host=DEFAULT_CODEC_HOST, port=codec_port
    ) as url:
        server.ui_codec_endpoint = url
        async with server:
            yield server
