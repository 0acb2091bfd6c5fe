"""Small, valid requests and turns for unit tests: each test changes only what it is about."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from turnkeeper.contracts.turn import TurnRequest
from turnkeeper.workflows.turn_state import Turn

START = datetime(2026, 1, 1, tzinfo=UTC)


def request_json(
    agent: dict[str, Any] | None = None, task: dict[str, Any] | None = None, **rest: Any
) -> dict[str, Any]:
    return {
        "agent": {"id": "unit-agent", "model": "anthropic:claude-sonnet-4-6", **(agent or {})},
        "task": {"id": "unit-task", "input": "Do the thing.", **(task or {})},
        **rest,
    }


def request(
    agent: dict[str, Any] | None = None, task: dict[str, Any] | None = None, **rest: Any
) -> TurnRequest:
    return TurnRequest.model_validate(request_json(agent, task, **rest))


def constraints(**fields: Any) -> dict[str, Any]:
    return {"constraints": fields}


def turn(request_: TurnRequest | None = None) -> Turn:
    return Turn.begin(request_ or request(), START)
