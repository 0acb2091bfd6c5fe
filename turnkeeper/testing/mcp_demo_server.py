"""A real MCP server, written with the official SDK, for tests of agents with MCP tools (the
kit's and the project's own, and the chaos matrix).

Run as `python -m turnkeeper.testing.mcp_demo_server`, or by its path
(`turnkeeper.testing.MCP_DEMO_SERVER`), for stdio, or with `--http PORT` for streamable HTTP on
127.0.0.1 (the tests kill and restart it to check that the worker reconnects).
"""

from __future__ import annotations

import argparse
import asyncio
import os

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


def main(app: MCPServer = server) -> None:
    """Serves `app` (another test server may pass its own) over stdio, or streamable HTTP on
    127.0.0.1 with `--http PORT`."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on PORT")
    args = parser.parse_args()
    if args.http is None:
        app.run("stdio")
    else:
        app.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
