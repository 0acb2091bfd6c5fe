"""Hypothesis strategies for bad input: JSON of every shape, including huge and deeply nested
values, and JSON shaped almost like what a field expects."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40)


def json_values(max_leaves: int = 30) -> st.SearchStrategy[Any]:
    return st.recursive(
        SCALARS,
        lambda children: (
            st.lists(children, max_size=5)
            | st.dictionaries(st.text(max_size=12), children, max_size=5)
        ),
        max_leaves=max_leaves,
    )


def deeply_nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"a": [value]}
    return value


# Keys the real shapes use, so that drawn objects get past the first check more often.
REQUEST_KEYS = st.sampled_from(
    ["agent", "task", "id", "model", "input", "constraints", "tools", "max_iterations",
     "history", "external_tools", "price", "approvers", "output_schema", "require_approval",
     "cost_budget_usd", "time_budget_ms", "fallback_models", "role", "content", "type"]
)  # fmt: skip


def request_like() -> st.SearchStrategy[Any]:
    """JSON that looks like a TurnRequest at some depth and is wrong somewhere."""
    leaf = SCALARS | st.sampled_from(["anthropic:claude-sonnet-4-6", "demo:x", ":", "*"])
    return st.recursive(
        leaf,
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(REQUEST_KEYS, children, max_size=6)
        ),
        max_leaves=40,
    )


def surrogate_text() -> st.SearchStrategy[str]:
    """Text holding lone surrogates: what decoding invalid UTF-8 with `surrogateescape` gives."""
    return st.binary(max_size=200).map(lambda raw: raw.decode("utf-8", "surrogateescape"))
