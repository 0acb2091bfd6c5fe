"""`turnkeeper mcp --agents DIR --as NAME`: the agents of a folder as MCP tools over stdio, for
a local MCP client that starts the command (docs/mcp-serve.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from turnkeeper.console.http_commands import TemporalAddress, TemporalNamespace, run_server


def mcp_command(
    agents: Annotated[
        Path,
        typer.Option(help="A folder of agent files (*.json), each served as a tool"),
    ],
    as_name: Annotated[
        str,
        typer.Option(
            "--as",
            help="The identity that starts, owns and is billed for the turns (its role and "
            "tenant from --tokens; without it, an operator of that name)",
        ),
    ],
    tokens: Annotated[
        Path | None,
        typer.Option(
            help="Token file of `turnkeeper tokens add`: the identity --as is read from it",
            show_default=False,
        ),
    ] = None,
    address: TemporalAddress = None,
    namespace: TemporalNamespace = None,
) -> None:
    """Serve the agents as MCP tools over stdin/stdout until the client closes them."""
    # Imported only to serve: the MCP server stack costs every other command a second.
    from turnkeeper.http.mcp.stdio import local_identity, serve_stdio

    run_server(
        lambda: serve_stdio(
            agents, local_identity(as_name, tokens), address=address, namespace=namespace
        )
    )
