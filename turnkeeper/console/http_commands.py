"""`turnkeeper serve` and `turnkeeper tokens add|list|revoke`: the HTTP API and who may use it
(docs/http-api.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.text import Text

from turnkeeper.client.connection import TemporalUnreachableError
from turnkeeper.client.settings_error import SettingsError
from turnkeeper.console.terminal import err, out
from turnkeeper.http.deadline import DEFAULT_REQUEST_TIMEOUT_S
from turnkeeper.http.defaults import SERVE_HOST, SERVE_PORT
from turnkeeper.http.edge import DEFAULT_MAX_BODY_BYTES
from turnkeeper.http.tokens import MEMBER, ROLES, TokenFileError, TokenStore

TokenFile = Annotated[
    Path, typer.Option("--file", help="The token file (created if missing; keep it private)")
]

# The connection options of the servers (`serve`, `mcp`).
TemporalAddress = Annotated[
    str | None, typer.Option(help="Temporal host:port (default: TEMPORAL_ADDRESS)")
]
TemporalNamespace = Annotated[
    str | None, typer.Option(help="Temporal namespace (default: TEMPORAL_NAMESPACE)")
]

tokens_app = typer.Typer(
    help="Bearer tokens of `turnkeeper serve`: one per identity.", no_args_is_help=True
)


def fail(error: Exception, code: int = 1) -> typer.Exit:
    err.print(Text(f"error: {error}", style="red"), soft_wrap=True)
    return typer.Exit(code)


@tokens_app.command("add")
def tokens_add(
    name: Annotated[str, typer.Argument(help="The identity: its approver name")],
    file: TokenFile,
    key: Annotated[
        Path | None,
        typer.Option(
            help="The identity's OpenSSH Ed25519 private key: the server signs its decisions",
            show_default=False,
        ),
    ] = None,
    role: Annotated[
        str,
        typer.Option(
            help=f"{' or '.join(ROLES)}: an operator may bill any tenant, set prices, see "
            "every turn and manage tenants"
        ),
    ] = MEMBER,
    tenant: Annotated[
        str | None,
        typer.Option(
            help="The tenant a member's turns are billed to (default: none; such a member "
            "starts turns without a tenant only)",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Create a token for NAME (replacing its old one); printed once, on the last line."""
    try:
        token = TokenStore(file).add(name, key, role=role, tenant=tenant)
    except TokenFileError as error:
        raise fail(error, 2) from None
    out.print(f"token for {name!r} (shown only now; {file} keeps its hash):", soft_wrap=True)
    out.print(token, soft_wrap=True, highlight=False)


@tokens_app.command("list")
def tokens_list(file: TokenFile) -> None:
    """The identities of the token file (never their tokens)."""
    try:
        identities = TokenStore(file).identities()
    except TokenFileError as error:
        raise fail(error, 2) from None
    for identity in identities:
        tenant = f"tenant {identity.tenant}" if identity.tenant else "no tenant"
        signing = f"  key {identity.key_file}" if identity.key_file else ""
        out.print(
            f"{identity.name}  {identity.role}  {tenant}  created {identity.created}{signing}",
            soft_wrap=True,
            highlight=False,
            markup=False,
        )


@tokens_app.command("revoke")
def tokens_revoke(
    name: Annotated[str, typer.Argument(help="The identity whose token stops working")],
    file: TokenFile,
) -> None:
    """Remove NAME's token: a running server refuses it from the next request."""
    try:
        TokenStore(file).revoke(name)
    except TokenFileError as error:
        raise fail(error, 2) from None
    out.print(f"revoked the token of {name!r}", soft_wrap=True)


def serve_command(
    tokens: Annotated[
        Path, typer.Option(help="Token file of `turnkeeper tokens add`", show_default=False)
    ],
    host: Annotated[str, typer.Option(help="Address to listen on")] = SERVE_HOST,
    port: Annotated[int, typer.Option(help="Port to listen on")] = SERVE_PORT,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(help="A browser origin allowed to call the API (default: none)"),
    ] = None,
    forwarded_allow_ips: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated addresses or networks of the proxies whose X-Forwarded-For "
            "and X-Forwarded-Proto are trusted (default: none, loopback included)",
            show_default=False,
        ),
    ] = None,
    max_body_bytes: Annotated[
        int,
        typer.Option(min=1, help="Request bodies over this many bytes are answered 413"),
    ] = DEFAULT_MAX_BODY_BYTES,
    request_timeout: Annotated[
        float,
        typer.Option(
            min=0.1,
            help="Seconds a client has to send a whole request (head and body); later: 408",
        ),
    ] = DEFAULT_REQUEST_TIMEOUT_S,
    address: TemporalAddress = None,
    namespace: TemporalNamespace = None,
    agents: Annotated[
        Path | None,
        typer.Option(
            help="A folder of agent files (*.json), each served as an MCP tool at /mcp "
            "(docs/mcp-serve.md)",
            show_default=False,
        ),
    ] = None,
) -> None:
    """The HTTP API and the approval inbox (docs/http-api.md); with --agents, the agents as
    MCP tools at /mcp (docs/mcp-serve.md)."""

    def serving() -> Coroutine[Any, Any, int]:
        TokenStore(tokens)  # a broken token file is said before anything listens
        # Imported only to serve: the HTTP stack costs seconds of start-up no other command
        # should pay.
        from turnkeeper.http.serve import serve

        return serve(
            tokens=tokens,
            host=host,
            port=port,
            cors_origins=cors_origin,
            forwarded_allow_ips=forwarded_allow_ips,
            max_body_bytes=max_body_bytes,
            request_timeout_s=request_timeout,
            address=address,
            namespace=namespace,
            agents=agents,
        )

    run_server(serving)


def run_server(server: Callable[[], Coroutine[Any, Any, int]]) -> NoReturn:
    """Runs a server command (`serve`, `mcp`) until it stops; what a user can act on (a token
    file, an agent file, Temporal out of reach) as one line and an exit code."""
    from turnkeeper.http.mcp.agents import AgentFileError  # the server's stack: see `serve_command`

    try:
        code = asyncio.run(server())
    except (TokenFileError, AgentFileError) as error:
        raise fail(error, 2) from None
    except (TemporalUnreachableError, SettingsError) as error:
        raise fail(error) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    raise typer.Exit(code)
