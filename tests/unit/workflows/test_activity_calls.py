"""The one way workflow code calls an activity: what each failure policy makes of an activity
that failed after its retries, and that a cancel passes through all but two of them."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError
from turnkeeper.contracts import errors
from turnkeeper.workflows.activity_calls import (
    PROPAGATE,
    AnswerModel,
    CarryOn,
    FailTurn,
    OnFailure,
    RefuseUpdate,
    execute,
)
from turnkeeper.workflows.failures import cause_message
from turnkeeper.workflows.turn_state import Turn

from tests.unit.builders import START, turn
from tests.unit.workflow_clock import WORKFLOW_LOGGER, WorkflowClock
from tests.unit.workflows.test_failures import activity_error

REFUSED = activity_error(ApplicationError("worker said no", type=errors.INVALID_TURN_REQUEST))
DEFECT = activity_error(ApplicationError("TypeError: oops", type=errors.TURN_INTERNAL_ERROR))
CANCELLED = activity_error(CancelledError("cancelled"))


class Scheduled:
    """Stands in for the SDK's `execute_activity` and `execute_local_activity`: records what
    was scheduled and answers with `outcome` (raised when it is an exception)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, outcome: object) -> None:
        self.calls: list[tuple[str, str, object, dict[str, Any]]] = []
        self._outcome = outcome
        monkeypatch.setattr(workflow, "execute_activity", self._remote)
        monkeypatch.setattr(workflow, "execute_local_activity", self._local)

    async def _remote(self, activity: str, arg: object, **options: Any) -> object:
        return self._answer("remote", activity, arg, options)

    async def _local(self, activity: str, arg: object, **options: Any) -> object:
        return self._answer("local", activity, arg, options)

    def _answer(self, kind: str, activity: str, arg: object, options: dict[str, Any]) -> object:
        self.calls.append((kind, activity, arg, options))
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        return self._outcome


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> WorkflowClock:
    return WorkflowClock(monkeypatch, START)


async def test_the_options_reach_the_sdk_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    scheduled = Scheduled(monkeypatch, "answer")
    options = workflow.ActivityConfig(start_to_close_timeout=timedelta(seconds=5), summary="s")
    assert await execute("remote_one", 1, PROPAGATE, result_type=str, options=options) == "answer"
    local = workflow.LocalActivityConfig(start_to_close_timeout=timedelta(seconds=2))
    assert await execute("local_one", 2, PROPAGATE, local=local) == "answer"
    assert scheduled.calls == [
        ("remote", "remote_one", 1, {"result_type": str, **options}),
        ("local", "local_one", 2, {"result_type": None, **local}),
    ]


async def failing(
    monkeypatch: pytest.MonkeyPatch, err: ActivityError, policy: OnFailure[Any]
) -> Any:
    Scheduled(monkeypatch, err)
    return await execute("an_activity", None, policy)


async def test_propagate_hands_the_failure_to_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ActivityError) as raised:
        await failing(monkeypatch, REFUSED, PROPAGATE)
    assert raised.value is REFUSED


def request_failure(err: ActivityError) -> tuple[str, str]:
    return errors.INVALID_TURN_REQUEST, f"agent.skills: {cause_message(err)}"


async def test_fail_turn_fails_it_typed_with_its_partial_report(
    monkeypatch: pytest.MonkeyPatch, clock: WorkflowClock
) -> None:
    with pytest.raises(ApplicationError) as raised:
        await failing(monkeypatch, REFUSED, FailTurn(turn(), request_failure))
    failure = raised.value
    assert failure.type == errors.INVALID_TURN_REQUEST
    assert failure.non_retryable
    assert failure.message == "agent.skills: worker said no"
    assert failure.details[0].outcome == "failed"


@pytest.mark.parametrize("kind", ["fail", "answer"])
async def test_a_defect_of_ours_fails_the_turn_under_its_own_name(
    monkeypatch: pytest.MonkeyPatch, clock: WorkflowClock, kind: str
) -> None:
    one = turn()
    policy = FailTurn(one, request_failure) if kind == "fail" else AnswerModel(one, str)
    with pytest.raises(ApplicationError) as raised:
        await failing(monkeypatch, DEFECT, policy)
    assert raised.value.type == errors.TURN_INTERNAL_ERROR
    assert raised.value.message == "TypeError: oops"


async def test_answer_model_gives_the_model_a_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(err: ActivityError) -> str:
        return f"the tool did not complete: {cause_message(err)}"

    answer = await failing(monkeypatch, REFUSED, AnswerModel(turn(), interrupted))
    assert answer == "the tool did not complete: worker said no"


async def test_carry_on_logs_the_failure_and_goes_on_with_the_stand_in(
    monkeypatch: pytest.MonkeyPatch, clock: WorkflowClock, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=WORKFLOW_LOGGER):
        stand_in = await failing(monkeypatch, REFUSED, CarryOn(set(), "unreadable; asking: %s"))
    assert stand_in == set()
    assert [record.getMessage() for record in caplog.records] == [
        "unreadable; asking: worker said no"
    ]


async def test_refuse_update_undoes_and_tells_the_update_s_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    undone: list[bool] = []
    policy = RefuseUpdate("Temporal did not take it", lambda: undone.append(True))
    with pytest.raises(ApplicationError) as raised:
        await failing(monkeypatch, REFUSED, policy)
    assert raised.value.message == "Temporal did not take it: InvalidTurnRequest: worker said no"
    assert raised.value.non_retryable
    assert raised.value.type is None
    assert undone == [True]


def policies(one: Turn) -> list[OnFailure[Any]]:
    return [
        PROPAGATE,
        FailTurn(one, request_failure),
        AnswerModel(one, str),
        CarryOn(None, "%s"),
    ]


@pytest.mark.parametrize("index", range(len(policies(turn()))))
async def test_a_cancel_ends_the_turn_cancelled_under_every_turn_policy(
    monkeypatch: pytest.MonkeyPatch, clock: WorkflowClock, index: int
) -> None:
    with pytest.raises(ActivityError) as raised:
        await failing(monkeypatch, CANCELLED, policies(turn())[index])
    assert raised.value is CANCELLED


async def test_a_cancel_is_carried_on_from_only_where_asked(
    monkeypatch: pytest.MonkeyPatch, clock: WorkflowClock
) -> None:
    policy = CarryOn("stand-in", "%s", even_when_cancelled=True)
    assert await failing(monkeypatch, CANCELLED, policy) == "stand-in"
    with pytest.raises(ApplicationError):
        await failing(monkeypatch, CANCELLED, RefuseUpdate("refused", lambda: None))
