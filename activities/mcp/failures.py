"""What the model is told when an MCP server cannot answer: one readable sentence per failure.

The MCP SDK runs its transports in anyio task groups, so a dropped connection often arrives as an
exception group around the real cause (e.g. `httpx2.ConnectError`); these helpers dig it out.
"""

from __future__ import annotations

import asyncio

from mcp import MCPError
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT


class McpUnavailable(Exception):
    """The server could not be started, reached or greeted; the message is for the model."""


def root_cause(err: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups that is not a cancellation: a task
    group cancels its siblings when one fails, and the cancellations only hide the cause."""
    if not isinstance(err, BaseExceptionGroup):
        return err
    leaves = [root_cause(inner) for inner in err.exceptions]
    for leaf in leaves:
        if not isinstance(leaf, asyncio.CancelledError):
            return leaf
    return leaves[0] if leaves else err


def is_connection_lost(err: BaseException) -> bool:
    """Whether `err` means the connection is gone (rather than the server refusing a request)."""
    cause = root_cause(err)
    if isinstance(cause, MCPError):
        return cause.code == CONNECTION_CLOSED
    return not isinstance(cause, TimeoutError)


def describe_unreachable(server: str, err: BaseException) -> str:
    """Why the server could not be connected to, e.g. for a command that does not exist."""
    cause = root_cause(err)
    if isinstance(cause, McpUnavailable):
        return str(cause)
    if isinstance(cause, MCPError) and cause.code == CONNECTION_CLOSED:
        return (
            f"MCP server {server!r} is unavailable: it closed the connection before the "
            "handshake was complete (does its command start an MCP server?)"
        )
    return f"MCP server {server!r} is unavailable: {_plain(cause)}"


def describe_call_failure(server: str, tool: str, timeout_s: float, err: BaseException) -> str:
    """Why a call of `tool` got no result; never includes the call's arguments."""
    cause = root_cause(err)
    if isinstance(cause, TimeoutError) or (
        isinstance(cause, MCPError) and cause.code == REQUEST_TIMEOUT
    ):
        return f"MCP tool {tool!r} of server {server!r} timed out after {timeout_s:g} s"
    if isinstance(cause, MCPError) and cause.code == CONNECTION_CLOSED:
        return (
            f"MCP server {server!r} closed the connection during the call of {tool!r}; "
            "the call may or may not have taken effect (the next call reconnects)"
        )
    if isinstance(cause, MCPError):
        return f"MCP server {server!r} refused the call of {tool!r}: {cause.message} ({cause.code})"
    return f"the call of {tool!r} on MCP server {server!r} failed: {_plain(cause)}"


def _plain(err: BaseException) -> str:
    text = str(err).strip()
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
