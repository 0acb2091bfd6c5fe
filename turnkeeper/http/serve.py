"""`turnkeeper serve`: the HTTP API on uvicorn, connected to Temporal like every client."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import uvicorn

from turnkeeper.client.connection import connect
from turnkeeper.http.app import create_app
from turnkeeper.http.tokens import TokenStore
from turnkeeper.http.turns import TurnService

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8787


async def serve(
    *,
    tokens: Path,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    cors_origins: list[str] | None = None,
    forwarded_allow_ips: str | None = None,
    address: str | None = None,
    namespace: str | None = None,
) -> int:
    """Serves until SIGINT or SIGTERM (uvicorn's own handling).

    `forwarded_allow_ips`: the proxies whose `X-Forwarded-For` / `X-Forwarded-Proto` are
    believed (uvicorn's option; default its own, the `FORWARDED_ALLOW_IPS` variable or
    127.0.0.1), so the failed sign-ins are counted per real client address.
    """
    store = TokenStore(tokens)
    client = await connect(address=address, namespace=namespace)
    app = create_app(TurnService(client), store, cors_origins=cors_origins)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        proxy_headers=True,
        forwarded_allow_ips=forwarded_allow_ips,
        log_level="info",
    )
    await uvicorn.Server(config).serve()
    return 0
