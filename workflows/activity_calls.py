"""One way workflow code calls an activity: `execute` schedules it with the options the caller
passes (their values live in `activity_options.py`), and the caller's failure policy says what
an `ActivityError` (the activity failed after its retries) means for the turn. The policies, side
by side:

- `FailTurn`: the turn cannot go on without the result, so it fails with a typed error carrying
  its partial report (`failures.fail`): skills the worker lacks, an output validator that broke,
  a conversation the turn continues that cannot be read.
- `AnswerModel`: a worker tool's call; the model gets a stand-in result saying the call did not
  complete, and decides what to do (`tools/retries.interrupted_call_text`).
- `CarryOn`: the result only improves what follows; a stand-in takes its place and the failure
  is logged: standing approvals (none, so a human is asked), the whole conversation of a
  compacted turn (the compacted one is reported), a session's read-back for its query.
- `RefuseUpdate`: the call serves an update; its caller is told, and the turn goes on.
- `PROPAGATE`: the `ActivityError` reaches the caller, whose own loop decides: the model call's
  fallback chain (`llm/activity.on_chain`) moves on to the next model or stops.

A cancelled activity is not a failure: its error is raised again, so the turn ends cancelled.
Two policies keep what their sites always did instead: `CarryOn(even_when_cancelled=True)` (a
session's read-back, which has always gone on past a cancel; ending it would need a
`workflow.patched` change), and `RefuseUpdate`, which the turn's cancel never reaches. A
defect of ours that the activity reported (`TurnInternalError`) fails the turn under its own
name before `FailTurn` and `AnswerModel` read the failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, NoReturn, Protocol, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from turnkeeper.workflows.failures import cause_message, fail, fail_if_internal_error
    from turnkeeper.workflows.turn_state import Turn

T = TypeVar("T")
D = TypeVar("D")
D_co = TypeVar("D_co", covariant=True)

# What a failure that fails the turn is called: (the contract's error type, the message).
Failure = Callable[[ActivityError], tuple[str, str]]


class OnFailure(Protocol[D_co]):
    """A failure policy: what the turn does when the activity failed after its retries."""

    @property
    def passes_cancel_on(self) -> bool:
        """Whether a cancelled activity's error is raised again instead of read as a failure."""
        ...

    def failed(self, err: ActivityError) -> D_co:
        """The stand-in for the result, or raises what the turn does instead."""
        ...


async def execute(
    activity: str,
    arg: Any,
    on_failure: OnFailure[D],
    *,
    result_type: type[T] | None = None,
    options: workflow.ActivityConfig | None = None,
    local: workflow.LocalActivityConfig | None = None,
) -> T | D:
    """Runs `activity` on `arg`, as a local activity with `local`, else with `options`, and
    returns its result; when it fails, what `on_failure` makes of the failure."""
    try:
        if local is not None:
            return await workflow.execute_local_activity(
                activity, arg, result_type=result_type, **local
            )
        return await workflow.execute_activity(
            activity, arg, result_type=result_type, **(options or {})
        )
    except ActivityError as err:
        if on_failure.passes_cancel_on and is_cancelled_exception(err):
            raise
        return on_failure.failed(err)


@dataclass(frozen=True)
class _Propagate:
    """The `ActivityError` reaches the caller, which decides."""

    passes_cancel_on: bool = True

    def failed(self, err: ActivityError) -> NoReturn:
        raise err


PROPAGATE: OnFailure[NoReturn] = _Propagate()


@dataclass(frozen=True)
class FailTurn:
    """The turn fails with `failure(err)`'s type and message, carrying its partial report."""

    turn: Turn
    failure: Failure
    passes_cancel_on: bool = True

    def failed(self, err: ActivityError) -> NoReturn:
        fail_if_internal_error(self.turn, err)
        fail(self.turn, *self.failure(err))


@dataclass(frozen=True)
class AnswerModel(Generic[D]):
    """The model gets `answer(err)` in place of the call's result."""

    turn: Turn
    answer: Callable[[ActivityError], D]
    passes_cancel_on: bool = True

    def failed(self, err: ActivityError) -> D:
        fail_if_internal_error(self.turn, err)
        return self.answer(err)


@dataclass(frozen=True)
class CarryOn(Generic[D]):
    """The turn goes on with `stand_in`; `warning` (a %s for the failure's message) is logged."""

    stand_in: D
    warning: str
    even_when_cancelled: bool = False

    @property
    def passes_cancel_on(self) -> bool:
        return not self.even_when_cancelled

    def failed(self, err: ActivityError) -> D:
        workflow.logger.warning(self.warning, cause_message(err))
        return self.stand_in


@dataclass(frozen=True)
class RefuseUpdate:
    """The update fails with `refusal` and the failure's cause, once `undo` has taken back what
    the update began; the turn goes on. The SDK cancels only a workflow's run, never an update's
    handler, so no cancel is passed on: it would be the update's own failure."""

    refusal: str
    undo: Callable[[], None]
    passes_cancel_on: bool = False

    def failed(self, err: ActivityError) -> NoReturn:
        self.undo()
        raise ApplicationError(f"{self.refusal}: {err.cause or err}", non_retryable=True) from None
