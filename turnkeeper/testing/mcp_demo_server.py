"""A real MCP server, written with the official SDK, for tests of agents with MCP tools (the
kit's and the project's own, and the chaos matrix).

Run as `python -m turnkeeper.testing.mcp_demo_server`, or by its path
(`turnkeeper.testing.MCP_DEMO_SERVER`), for stdio, or with `--http PORT` for streamable HTTP on
127.0.0.1 (the tests kill and restart it to check that the worker reconnects). With
`--bearer-file PATH` as well, every HTTP request must carry `Authorization: Bearer <the file's
content>`, read on each request, so that a test can rotate the token under a running worker;
`GET /refusals` (no token needed) answers how many requests were refused with 401.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent, TextContent

server = MCPServer("turnkeeper-demo")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def fail() -> str:
    """Always raises, so the client sees an MCP error result."""
    raise ToolError("the demo tool failed on purpose")


@server.tool()
def crash() -> str:
    """Raises an unexpected exception (not a ToolError)."""
    raise RuntimeError("unexpected crash inside the tool")


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep for `seconds`, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds:g} s"


@server.tool()
def lookup(key: str) -> dict[str, object]:
    """Structured output: a small JSON object."""
    return {"key": key, "values": [1, 2, 3], "found": True}


@server.tool()
def picture() -> list[TextContent | ImageContent]:
    """Text followed by an image, which turnkeeper does not pass on."""
    return [
        TextContent(text="here is the chart"),
        ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
    ]


@server.tool()
def chart() -> ImageContent:
    """Only an image."""
    return ImageContent(data="iVBORw0KGgo=", mime_type="image/png")


@server.tool()
def whoami(ctx: Context) -> dict[str, str | None]:
    """What the client sent besides the arguments: its Authorization header (HTTP only) and the
    idempotency key in the request's _meta."""
    headers = ctx.headers or {}
    meta = ctx.request_context.meta or {}
    return {
        "authorization": headers.get("authorization"),
        "idempotency_key": meta.get("turnkeeper/idempotency_key"),
    }


@server.tool()
def exit_server() -> str:
    """Ends the server process in the middle of the call, as a crash would."""
    os._exit(3)


@server.tool(name="weird.name")
def weird_name() -> str:
    """A tool whose name needs sanitising for the Anthropic tool-name pattern."""
    return "weird ok"


Asgi = Any  # a Starlette app: (scope, receive, send) -> None


def bearer_required(app: Asgi, token_file: Path) -> Asgi:
    """`app` behind a bearer token read from `token_file` on each request, as a server whose
    token an outside agent rotates would check it."""
    refusals = 0

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        nonlocal refusals
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["path"] == "/refusals":
            await _answer(send, 200, str(refusals).encode())
            return
        sent = dict(scope["headers"]).get(b"authorization", b"").decode()
        token = await asyncio.to_thread(token_file.read_text, encoding="utf-8")
        if sent != f"Bearer {token.strip()}":
            refusals += 1
            await _answer(send, 401, b'{"error": "invalid_token"}', b'Bearer error="invalid_token"')
            return
        await app(scope, receive, send)

    return guarded


async def _answer(send: Any, status: int, body: bytes, challenge: bytes | None = None) -> None:
    headers = [(b"content-type", b"application/json")]
    if challenge is not None:
        headers.append((b"www-authenticate", challenge))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _serve_with_bearer(mcp_server: MCPServer, port: int, token_file: Path) -> None:
    import uvicorn

    app = bearer_required(mcp_server.streamable_http_app(host="127.0.0.1"), token_file)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def main(app: MCPServer = server) -> None:
    """Serves `app` (another test server may pass its own) over stdio, or streamable HTTP on
    127.0.0.1 with `--http PORT`."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on PORT")
    parser.add_argument(
        "--bearer-file", type=Path, metavar="PATH", help="with --http: require this bearer token"
    )
    args = parser.parse_args()
    if args.http is None:
        app.run("stdio")
    elif args.bearer_file is not None:
        _serve_with_bearer(app, args.http, args.bearer_file)
    else:
        app.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
