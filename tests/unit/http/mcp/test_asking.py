"""The 2026-07-28 round trip's state (turnkeeper/http/mcp/asking.py) through the SDK's own
`RequestStateBoundary`: sealed by one server and opened by another that shares
`TURNKEEPER_MCP_STATE_KEYS` (a retried call may reach any replica), refused under another key,
for another identity, tool or input; and a state that is not ours decides nothing."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolRequestParams

from tests.unit.http.fake_turns import FakeTurns
from turnkeeper.http.mcp.asking import STATE_KEYS_ENV, resumed, state_boundary
from turnkeeper.http.mcp.serving import Serving
from turnkeeper.http.tokens import Identity

KEY = "k" * 32
CALL = {"name": "writer", "arguments": {"task": "Write."}}


def serving_as(name: str) -> Serving:
    return Serving({}, FakeTurns(), Identity(name=name, token_sha256="-"))  # type: ignore[arg-type]


def call_context(params: dict[str, Any]) -> ServerRequestContext[Any, Any]:
    # Over stdio the caller is the server's own identity: no session or HTTP request is read.
    return ServerRequestContext(
        session=None,  # type: ignore[arg-type]
        lifespan_context={},
        protocol_version="2026-07-28",
        method="tools/call",
        params=params,
    )


async def sealed_by(serving: Serving, state: str) -> str:
    """The `requestState` a server answers for `state`, as the client receives it."""

    async def handler(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        return {"resultType": "input_required", "requestState": state}

    answered = await state_boundary(serving, "turnkeeper")(call_context(CALL), handler)
    assert isinstance(answered, dict)
    return str(answered["requestState"])


async def opened_by(serving: Serving, sealed: str, call: dict[str, Any] = CALL) -> str:
    """What a server's handler reads of a retried call carrying `sealed`."""
    seen: list[str] = []

    async def handler(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        assert ctx.params is not None
        seen.append(ctx.params["requestState"])
        return {}

    retried = call_context({**call, "requestState": sealed})
    await state_boundary(serving, "turnkeeper")(retried, handler)
    return seen[0]


async def test_a_replica_with_the_same_keys_opens_the_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(STATE_KEYS_ENV, KEY)
    sealed = await sealed_by(serving_as("alice"), '{"turn": "t"}')
    assert "turn" not in sealed  # sealed, not signed: the client cannot read it
    assert await opened_by(serving_as("alice"), sealed) == '{"turn": "t"}'
    # Rotation: the new key first seals, the old one still opens.
    monkeypatch.setenv(STATE_KEYS_ENV, f"{'n' * 32},{KEY}")
    assert await opened_by(serving_as("alice"), sealed) == '{"turn": "t"}'


@pytest.mark.parametrize(
    ("keys", "name", "call"),
    [
        (f"{'o' * 32}", "alice", CALL),  # another replica's key
        (KEY, "mallory", CALL),  # another identity
        (KEY, "alice", {**CALL, "name": "other"}),  # another tool
        (KEY, "alice", {**CALL, "arguments": {"task": "Something else."}}),  # another input
    ],
)
async def test_a_state_is_refused_anywhere_else(
    monkeypatch: pytest.MonkeyPatch, keys: str, name: str, call: dict[str, Any]
) -> None:
    monkeypatch.setenv(STATE_KEYS_ENV, KEY)
    sealed = await sealed_by(serving_as("alice"), '{"turn": "t"}')
    monkeypatch.setenv(STATE_KEYS_ENV, keys)
    with pytest.raises(MCPError, match="Invalid or expired requestState"):
        await opened_by(serving_as(name), sealed, call)


def test_a_key_too_short_is_said_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STATE_KEYS_ENV, "short")
    with pytest.raises(ValueError, match="at least 32 bytes"):
        state_boundary(serving_as("alice"), "turnkeeper")


@pytest.mark.parametrize("state", ["not json", '{"asked": []}', "[1, 2]"])
async def test_a_state_that_is_not_ours_decides_nothing(state: str) -> None:
    serving = serving_as("olga")
    params = CallToolRequestParams.model_validate(
        {**CALL, "requestState": state, "inputResponses": {}}
    )
    with pytest.raises(MCPError) as refused:
        await resumed(serving, Identity(name="olga", token_sha256="-"), params)
    assert refused.value.code == INVALID_PARAMS
    assert serving.turns.decided == []  # type: ignore[attr-defined]


async def test_a_first_call_resumes_nothing() -> None:
    serving = serving_as("olga")
    params = CallToolRequestParams.model_validate(CALL)
    assert await resumed(serving, Identity(name="olga", token_sha256="-"), params) is None
