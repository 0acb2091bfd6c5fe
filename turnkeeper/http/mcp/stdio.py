"""`turnkeeper mcp --agents DIR --as NAME`: the served agents over stdio, for a local MCP
client that starts the command itself (a coding assistant's MCP server entry).

Every request is made by one identity, `NAME` (docs/mcp-serve.md, Who calls):

- with `--tokens FILE`, the identity `NAME` of that token file, with its role, tenant and
  signing key, exactly as its token would sign in to `/mcp` (no token is needed: whoever runs
  the command reads the file);
- without, an operator named `NAME`: the process's user reaches Temporal directly, and could
  start any turn with `turnkeeper run` anyway, so it is given no less.
"""

from __future__ import annotations

from pathlib import Path

from mcp.server.stdio import stdio_server

from turnkeeper.client.connection import connect
from turnkeeper.http.mcp.agents import load_agents
from turnkeeper.http.mcp.server import served
from turnkeeper.http.tokens import OPERATOR, Identity, TokenFileError, TokenStore, name_problem
from turnkeeper.http.turns import TurnService


def local_identity(name: str, tokens: Path | None) -> Identity:
    """The identity `turnkeeper mcp --as NAME [--tokens FILE]` serves as (module docstring).

    Raises:
        TokenFileError: A name that is no identity's name, a token file that cannot be read,
            or no identity `NAME` in it.
    """
    problem = name_problem(name)
    if problem:
        raise TokenFileError(f"--as: {problem}")
    if tokens is None:
        return Identity(name=name, token_sha256="", role=OPERATOR)
    store = TokenStore(tokens)
    for identity in store.identities():
        if identity.name == name:
            return identity
    known = ", ".join(identity.name for identity in store.identities()) or "none"
    raise TokenFileError(f"--as: no identity {name!r} in {tokens} (identities: {known})")


async def serve_stdio(
    agents: Path,
    identity: Identity,
    *,
    address: str | None = None,
    namespace: str | None = None,
) -> int:
    """Serves until the client closes stdin.

    Raises:
        AgentFileError: An agent file cannot be served (before anything is read).
    """
    found = load_agents(agents)
    client = await connect(address=address, namespace=namespace)
    server = served(found, TurnService(client), identity)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
    return 0
