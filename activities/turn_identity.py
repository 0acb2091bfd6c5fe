"""The turn an activity works for. Workflows leave `turn_id` out of activity inputs (it would be
written into history on every call) since the activity's own info names the workflow; inputs of
older workflows still carry it."""

from __future__ import annotations

from typing import Protocol, TypeVar

from temporalio import activity


class _TurnScoped(Protocol):
    turn_id: str

    def model_copy(self, *, update: dict[str, object]) -> _TurnScoped: ...


_Call = TypeVar("_Call", bound=_TurnScoped)


def bound_to_turn(call: _Call) -> _Call:
    if call.turn_id:
        return call
    return call.model_copy(update={"turn_id": activity.info().workflow_id})  # type: ignore[return-value]
