"""A run's stream when Temporal fails its read midway (turnkeeper.http.agui.run): the client
reads AG-UI's RUN_ERROR, not a connection cut short."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.http.agui.run import RunIds, TurnRun, sse
from turnkeeper.http.tokens import TokenStore


class _Unreachable:
    """Turns whose event stream Temporal stops answering."""

    async def events(self, workflow_id: str, after: int | None) -> AsyncIterator[Any]:
        raise RPCError("connection refused", RPCStatusCode.UNAVAILABLE, b"")
        yield  # an async generator, as the service's


async def test_a_stream_temporal_stops_answering_ends_in_run_error(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    store.add("alice")
    [alice] = store.identities()
    run = TurnRun(_Unreachable(), alice, "turn-1", RunIds("t1", "r1"))  # type: ignore[arg-type]

    chunks = [chunk async for chunk in sse(run)]

    events = [json.loads(chunk.removeprefix("data: ")) for chunk in chunks]
    assert [event["type"] for event in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert events[1]["code"] == "unavailable" and "connection refused" in events[1]["message"]
