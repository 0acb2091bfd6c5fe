"""A tool call's context as Cedar values.

Cedar has no null and no floating-point numbers, and reads a record whose one key is `__entity`
or `__extn` as an entity or an extension value. So JSON from the model is adapted: nulls are
left out, a whole float becomes a Long, another float a `decimal` (four places, Cedar's
precision), a number beyond a Long a string, and the escape keys are dropped, so a model cannot
forge an entity reference inside `context.input`.
"""

from __future__ import annotations

from typing import Any

from turnkeeper.contracts.policy_io import PolicyCheckInput

_LONG = 2**63
_ESCAPES = frozenset({"__entity", "__extn", "__expr"})


def cedar_context(call: PolicyCheckInput) -> dict[str, Any]:
    """`context` of the call's Cedar request."""
    at, caller = call.time, call.caller
    return {
        "input": cedar_value(call.input),
        "cost_usd": _decimal(caller.cost_usd),
        "iteration": caller.iteration,
        "depth": caller.depth,
        "time": {"__extn": {"fn": "datetime", "arg": at.strftime("%Y-%m-%dT%H:%M:%SZ")}},
        "hour": at.hour,
        "weekday": at.weekday(),
    }


def cedar_value(value: Any) -> Any:
    """`value` (JSON) as a Cedar JSON value; None where Cedar has no equivalent (a null)."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value if -_LONG <= value < _LONG else str(value)
    if isinstance(value, float):
        if value.is_integer() and -_LONG <= value < _LONG:
            return int(value)
        return _decimal(value) if abs(value) < 9e14 else str(value)
    if isinstance(value, list):
        return [item for item in map(cedar_value, value) if item is not None]
    if isinstance(value, dict):
        record = {key: cedar_value(item) for key, item in value.items() if key not in _ESCAPES}
        return {key: item for key, item in record.items() if item is not None}
    return None


def _decimal(value: float) -> dict[str, Any]:
    return {"__extn": {"fn": "decimal", "arg": f"{value:.4f}"}}
