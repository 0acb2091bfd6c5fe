"""A real MCP server, written with the official SDK's `MCPServer`, whose tool asks the person
for input before it answers (a `Resolve` dependency that returns `Elicit`). Over 2026-07-28 the
SDK sends the question as an `InputRequiredResult` with a signed `requestState`; before, as an
`elicitation/create` request in the middle of the call.

Run as `python tests/support/mcp_asking_server.py --http PORT` (streamable HTTP on 127.0.0.1)
or without arguments for stdio. Never import it in a test process: building an `MCPServer`
installs the SDK's rich logging handler on the root logger, which workflow code in the sandbox
then cannot use.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Elicit, ElicitationResult, MCPServer, Resolve
from pydantic import BaseModel

from turnkeeper.testing.mcp_demo_server import main

server = MCPServer("turnkeeper-asking")

QUESTION = "Where should the order go?"


class Shipping(BaseModel):
    """The answer the server asks for."""

    address: str
    express: bool = False


def ask_shipping() -> Elicit[Shipping]:
    """Asks the person where to ship."""
    return Elicit(QUESTION, Shipping)


@server.tool()
def order(
    item: str, shipping: Annotated[ElicitationResult[Shipping], Resolve(ask_shipping)]
) -> str:
    """Orders `item`; the server asks the person for the shipping address."""
    if shipping.action != "accept":
        return f"order of {item} not placed: the person chose {shipping.action}"
    express = " by express" if shipping.data.express else ""
    return f"{item} ships to {shipping.data.address}{express}"


if __name__ == "__main__":
    main(server)
