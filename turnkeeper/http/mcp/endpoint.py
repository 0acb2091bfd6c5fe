"""`/mcp` of `turnkeeper serve --agents DIR`: the SDK's Streamable HTTP session manager behind
the same bearer tokens, and the same limit on failed sign-ins, as `/v1/…`.

The caller is signed in before the SDK reads anything of the request: a request without a valid
token is answered 401 (429 once its address failed too often) and never reaches the server. The
identity then rides in the request's scope: as `state` for the handlers (`Serving.identity`),
and as the SDK's authenticated user, so that a session belongs to the identity that opened it
(another token meets "Session not found").

Sessions (2025 era) live in this process: a client whose server restarted opens a new one. No
task lives here: a task is its turn (`tasks`).
"""

from __future__ import annotations

import json
from contextlib import AbstractAsyncContextManager
from typing import Any, Final

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from turnkeeper.http.auth import FailedSignIns, sign_in
from turnkeeper.http.errors import ApiError
from turnkeeper.http.mcp.serving import IDENTITY_STATE
from turnkeeper.http.tokens import Identity, TokenStore

MCP_PATH: Final = "/mcp"


class McpEndpoint:
    """The ASGI app of `/mcp`; `run()` must be entered around the server's life."""

    def __init__(
        self,
        server: Server[Any],
        tokens: TokenStore,
        failures: FailedSignIns,
        allowed_origins: list[str] | None = None,
    ) -> None:
        self.tokens = tokens
        self.failures = failures
        # The browser origins `serve --cors-origin` allows, as for `/v1/…`.
        self.allowed_origins = frozenset(allowed_origins or ())
        # SSE answers (not JSON): a plain call's progress notifications ride its answer.
        self.manager = StreamableHTTPSessionManager(app=server)

    def run(self) -> AbstractAsyncContextManager[None]:
        """The session manager's life (its task group); serve requests only inside it."""
        return self.manager.run()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin is not None and origin not in self.allowed_origins:
            # The transport's rule against DNS rebinding: a page of another site (a browser
            # sends its Origin) never reaches the server. Programs send no Origin.
            await _refuse(ApiError(403, f"origin {origin!r} may not call /mcp"), send)
            return
        client = scope.get("client")
        address = client[0] if client else "unknown"
        try:
            identity = sign_in(self.tokens, self.failures, headers.get("authorization"), address)
        except ApiError as error:
            await _refuse(error, send)
            return
        scope.setdefault("state", {})[IDENTITY_STATE] = identity
        scope["user"] = AuthenticatedUser(_principal(identity))
        await self.manager.handle_request(scope, receive, send)


def with_mcp(app: ASGIApp, endpoint: McpEndpoint) -> ASGIApp:
    """`app` with `endpoint` at `/mcp` (and `/mcp/`), outside the app's own middleware: the
    endpoint signs its callers in itself, and its answers may stream for a turn's length."""

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].rstrip("/") == MCP_PATH:
            await endpoint(scope, receive, send)
        else:
            await app(scope, receive, send)

    return route


def _principal(identity: Identity) -> AccessToken:
    # The token itself is never kept: the session's owner is compared by name (`subject`).
    return AccessToken(token="", client_id=identity.name, scopes=[], subject=identity.name)


async def _refuse(error: ApiError, send: Send) -> None:
    """The API's own refusal: its status, `{"detail": …}`, and the headers that go with it."""
    headers = [(b"content-type", b"application/json")]
    if error.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if error.retry_after_s is not None:
        headers.append((b"retry-after", str(error.retry_after_s).encode()))
    body = json.dumps({"detail": error.message}).encode()
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
