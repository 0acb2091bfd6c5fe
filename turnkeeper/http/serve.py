"""`turnkeeper serve`: the HTTP API on uvicorn, connected to Temporal like every client."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Final

import uvicorn
from starlette.types import ASGIApp

from turnkeeper.client.connection import connect
from turnkeeper.http.app import create_app
from turnkeeper.http.auth import FailedSignIns
from turnkeeper.http.conversations import Conversations
from turnkeeper.http.deadline import DEFAULT_REQUEST_TIMEOUT_S, request_deadline_protocol
from turnkeeper.http.defaults import SERVE_HOST, SERVE_PORT
from turnkeeper.http.edge import DEFAULT_MAX_BODY_BYTES, guard_edge
from turnkeeper.http.mcp.agents import load_agents
from turnkeeper.http.tokens import TokenStore
from turnkeeper.http.turns import TurnService

DEFAULT_HOST: Final = SERVE_HOST
DEFAULT_PORT: Final = SERVE_PORT


async def serve(
    *,
    tokens: Path,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    cors_origins: list[str] | None = None,
    forwarded_allow_ips: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
    address: str | None = None,
    namespace: str | None = None,
    agents: Path | None = None,
) -> int:
    """Serves until SIGINT or SIGTERM (uvicorn's own handling).

    Args:
        forwarded_allow_ips: The proxies (comma-separated addresses or networks) whose
            `X-Forwarded-For` / `X-Forwarded-Proto` are believed, so that failed sign-ins are
            counted per real client. None or empty: nobody's, not even loopback's (uvicorn would
            believe 127.0.0.1, or its `FORWARDED_ALLOW_IPS` variable: any local process could
            then pick its address), and the address is the connection's own.
        max_body_bytes: Larger request bodies are answered 413 (`edge`).
        request_timeout_s: A request not received whole within this is answered 408
            (`deadline`).
        agents: A folder of agent files served as MCP tools at `/mcp` (docs/mcp-serve.md);
            None: no `/mcp`.

    Raises:
        AgentFileError: An agent file of `agents` cannot be served (before anything listens).
    """
    agents_found = load_agents(agents) if agents is not None else None
    store = TokenStore(tokens)
    client = await connect(address=address, namespace=namespace)
    turns = TurnService(client)
    failures = FailedSignIns()  # one count of failed sign-ins for the API and `/mcp` alike
    conversations = Conversations(client, agents_found) if agents_found is not None else None
    app: ASGIApp = create_app(
        turns, store, cors_origins=cors_origins, failures=failures, conversations=conversations
    )
    endpoint = None
    if agents_found is not None:
        # Imported only to serve agents: the MCP SDK costs a plain server's start a second.
        from turnkeeper.http.mcp import McpEndpoint, served, with_mcp

        endpoint = McpEndpoint(
            served(agents_found, turns), store, failures, allowed_origins=cors_origins
        )
        app = with_mcp(app, endpoint)
    trusted = (forwarded_allow_ips or "").strip()
    config = uvicorn.Config(
        guard_edge(app, max_body_bytes=max_body_bytes),
        host=host,
        port=port,
        http=request_deadline_protocol(request_timeout_s),
        # Off unless proxies are named: with proxy_headers off, uvicorn installs no proxy-header
        # handling at all, so neither its default nor the environment variable applies.
        proxy_headers=bool(trusted),
        forwarded_allow_ips=trusted or None,
        log_level="info",
    )
    async with AsyncExitStack() as running:
        if endpoint is not None:
            await running.enter_async_context(endpoint.run())
        await uvicorn.Server(config).serve()
    return 0
