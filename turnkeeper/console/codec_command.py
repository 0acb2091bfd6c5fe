"""`turnkeeper codec-server` and `turnkeeper keys new`: the deployment's side of encryption."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import signal
from collections.abc import Sequence

from turnkeeper.console.terminal import out
from turnkeeper.devtools.codec_server import (
    CODEC_TOKEN_ENV,
    Access,
    CodecService,
    running_codec_server,
)
from turnkeeper.payloads.keyring import Keyring, new_key_entry
from turnkeeper.payloads.stores import open_store
from turnkeeper.worker.settings import Settings


async def serve_codec(
    *,
    host: str,
    port: int,
    ui_origins: Sequence[str],
    namespaces: Sequence[str],
    allowed_hosts: Sequence[str] = (),
) -> int:
    """Serves until SIGINT or SIGTERM, with the keys and the content store of the environment
    (`TURNKEEPER_ENCRYPTION_KEYS`, `TURNKEEPER_STORE_DIR` / `TURNKEEPER_STORE_URL`)."""
    keyring = Keyring.from_env()
    store = open_store(Settings.from_env(), keyring)
    access = Access(
        namespaces=frozenset(namespaces),
        token=os.environ.get(CODEC_TOKEN_ENV) or None,
        ui_origins=frozenset(ui_origins),
        hosts=frozenset(allowed_hosts),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        async with running_codec_server(
            CodecService.over(store, keyring), access, host=host, port=port
        ) as url:
            encryption = f"keys {', '.join(keyring.key_ids)}" if keyring.enabled else "no keys"
            token = "token required" if access.token else "no token (loopback only)"
            out.print(f"codec server on {url} · {encryption} · {token}", soft_wrap=True)
            # A command to copy: never wrapped at the terminal's (or a log's 80-column) width.
            out.print(
                f"  temporal workflow show --workflow-id ID --codec-endpoint {url}", soft_wrap=True
            )
            await stop.wait()
    finally:
        await store.aclose()
    return 0


def new_key_line(key_id: str | None) -> str:
    """A fresh `id:<base64>` entry; the default id says when it was made, so that a rotation's
    newest key is easy to tell in the list."""
    return new_key_entry(key_id or f"k{datetime.datetime.now(datetime.UTC):%Y%m%d%H%M%S}")
