"""The bearer token of an MCP server whose token rotates, as an `httpx2.Auth` flow.

The MCP SDK sends every request of a streamable-HTTP session (the handshake, `tools/list`,
`tools/call`, the event stream) through one `httpx2.AsyncClient`, so the client's auth flow is the
one place that sees every 401, whichever request met it. There the token is read again and the
request sent once more with the new one; a second 401 is handed to the SDK as it came, and the
call fails as any refused call does. Retrying is safe: a server that answers 401 has not run the
request. The SDK's own OAuth support (`mcp.client.auth`) is an `httpx2.Auth` too; this is its
counterpart for a token that something outside the worker renews.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import httpx2
from turnkeeper.activities.credentials import CredentialError, RotatingCredential

_UNAUTHORIZED = 401


class RotatingBearerAuth(httpx2.Auth):
    """Sends `Authorization: Bearer <token>`; on a 401, reads the token again and retries once.

    Args:
        credential: the token's source and cached value.
    """

    # The body is read before the first send, so that the retry can send it again.
    requires_request_body = True

    def __init__(self, credential: RotatingCredential) -> None:
        self._credential = credential

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        await request.aread()  # `requires_request_body`, which an own flow honours itself
        token, generation = await self._credential.current()
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code != _UNAUTHORIZED:
            return
        renewed = await self._renewed(token, generation)
        if renewed is None:
            return
        request.headers["Authorization"] = f"Bearer {renewed}"
        yield request

    async def _renewed(self, token: str, generation: int) -> str | None:
        """The token read again, or None when there is nothing new to retry with (the source
        cannot be read, or still holds the refused token: `RotatingCredential` logs which)."""
        try:
            renewed, _ = await self._credential.refreshed(generation)
        except CredentialError:
            return None
        return None if renewed == token else renewed
