"""Declaring worker tools: only a cheap and safe tool (idempotent, no approval, a short timeout)
may be `local`, and a local tool without a timeout gets the local limit rather than the general
default."""

from __future__ import annotations

import pytest
from turnkeeper.activities.tools.registry import (
    DEFAULT_TOOL_TIMEOUT_S,
    LOCAL_TOOL_MAX_TIMEOUT_S,
    worker_tool,
)


@pytest.mark.parametrize(
    "options",
    [
        {"idempotent": False},
        {"requires_approval": True},
        {"timeout_s": LOCAL_TOOL_MAX_TIMEOUT_S + 1},
    ],
)
def test_a_tool_that_is_not_cheap_and_safe_cannot_be_local(options: dict[str, object]) -> None:
    def charge(amount: int) -> str:
        return f"charged {amount}"

    with pytest.raises(ValueError, match="'charge' cannot be local"):
        worker_tool(local=True, **options)(charge)  # type: ignore[arg-type]


def test_a_local_tool_without_a_timeout_gets_the_local_limit() -> None:
    # As the README writes it; with the general 60 s default it could not be declared at all.
    def lookup(order_id: str) -> str:
        return order_id

    tool = worker_tool(local=True)(lookup)
    assert (tool.local, tool.timeout_s) == (True, LOCAL_TOOL_MAX_TIMEOUT_S)
    assert worker_tool(lookup).timeout_s == DEFAULT_TOOL_TIMEOUT_S
