"""The `wait` tool's arguments as the turn reads them (`contracts/waits.py`), the worker's bound
on one wait (`activities/runtime/wait_limit.py`) and the ids events start turns at."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.runtime.wait_limit import max_wait_s
from turnkeeper.contracts.turn_ids import turn_id_problem
from turnkeeper.contracts.waits import (
    DEFAULT_MAX_WAIT_S,
    MAX_WAIT_ENV,
    WaitingFor,
    event_workflow_id,
    wait_line,
    wait_plan,
)

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DAY = 86400.0


def test_until_and_seconds_become_the_timer_length() -> None:
    plan, problem = wait_plan({"until": "2026-12-02T12:00:00Z", "reason": "r"}, NOW, 30 * DAY)
    assert problem is None and plan is not None
    assert (plan.seconds, plan.reason) == (3 * DAY, "r")
    plan, _ = wait_plan({"until": "2026-11-29T15:00:00+02:00", "reason": ""}, NOW, DAY)
    assert plan is not None and plan.seconds == 3600  # 13:00 UTC
    plan, _ = wait_plan({"seconds": 90, "reason": ""}, NOW, DAY)
    assert plan is not None and plan.seconds == 90


def test_an_event_wait_may_have_a_bound_or_none() -> None:
    plan, _ = wait_plan({"event": "deploy-finished", "reason": ""}, NOW, DAY)
    assert plan is not None and (plan.event, plan.seconds) == ("deploy-finished", None)
    plan, _ = wait_plan({"event": "deploy-finished", "seconds": 60, "reason": ""}, NOW, DAY)
    assert plan is not None and plan.seconds == 60


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"until": "tomorrow"}, "is not an ISO-8601 time"),
        ({"until": "2026-12-01T09:00:00"}, "has no offset"),
        ({"until": "2026-11-29T11:59:59+00:00"}, "is in the past"),
        ({"until": "2026-11-29T12:00:00+00:00"}, "is in the past"),
        ({"until": 5}, "as a string"),
        ({"seconds": -1}, "positive number"),
        ({"seconds": float("nan")}, "positive number"),
        ({"seconds": "60"}, "must be a number"),
        ({"seconds": True}, "must be a number"),
        ({"seconds": 31 * DAY}, "31 days is longer than this runtime allows (30 days"),
        ({"until": "2027-06-01T00:00:00Z"}, "the operator's maximum"),
        ({"seconds": 1, "until": "2027-01-01T00:00:00Z"}, "not both"),
        ({}, "Give `until`, `seconds` or `event`"),
        ({"event": ""}, "must name an event"),
    ],
)
def test_waits_that_cannot_be_say_why(arguments: dict[str, object], words: str) -> None:
    plan, problem = wait_plan({"reason": "x", **arguments}, NOW, 30 * DAY)
    assert plan is None
    assert problem is not None and words in problem


def test_the_operator_bound_comes_from_the_worker_environment() -> None:
    assert max_wait_s({}) == DEFAULT_MAX_WAIT_S == 30 * DAY
    assert max_wait_s({MAX_WAIT_ENV: "3600"}) == 3600
    for bad in ("0", "-5", "soon", "inf"):
        with pytest.raises(ApplicationError, match=MAX_WAIT_ENV):
            max_wait_s({MAX_WAIT_ENV: bad})


def test_event_turns_have_ids_only_the_runtime_gives() -> None:
    workflow_id = event_workflow_id("deployer", "deploy-42")
    assert workflow_id == "event:deployer:deploy-42"
    assert "the turns events start" in (turn_id_problem(workflow_id) or "")


def test_a_wait_line_says_what_and_until_when() -> None:
    wait = WaitingFor(
        call_id="toolu_1",
        reason="the deploy",
        since=NOW,
        until=NOW + timedelta(days=3),
        event="deploy-finished",
    )
    assert wait_line(wait) == (
        "waiting for event `deploy-finished` until 2026-12-02 12:00:00 UTC (call `toolu_1`): "
        "the deploy"
    )
