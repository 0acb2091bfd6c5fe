"""The fallback chain as deterministic state: which models a call may try, which it passes over
and why, which refusals it may move past, and the cooldown of a model that failed (`moved_on`
logs through `workflow.logger`: tests/unit/workflow_clock.py stands in for it)."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts import errors
from turnkeeper.workflows.activity_options import MODEL_CALL_RETRY
from turnkeeper.workflows.llm import fallback
from turnkeeper.workflows.turn_state import Turn

from tests.unit.builders import START, request, turn
from tests.unit.workflow_clock import WORKFLOW_LOGGER, WorkflowClock

PRIMARY = "anthropic:claude-sonnet-4-6"
SECOND = "openai:gpt-4.1"
THIRD = "anthropic:claude-haiku-4-5"


def chain_turn(**agent: Any) -> Turn:
    return turn(request(agent={"fallback_models": [SECOND, THIRD], **agent}))


def test_a_fresh_turn_tries_the_whole_chain_in_order() -> None:
    plan = fallback.plan(chain_turn(), START)
    assert plan.ready == [PRIMARY, SECOND, THIRD]
    assert plan.notes() == []


def test_a_model_on_cooldown_is_passed_over_with_the_time_it_has_left() -> None:
    t = chain_turn()
    t.fallback.cool_down(PRIMARY, START + timedelta(seconds=45))
    plan = fallback.plan(t, START)
    assert plan.ready == [SECOND, THIRD]
    assert plan.notes() == [f"{PRIMARY}: cooling down for 45 s more after failing"]


def test_a_cooldown_that_has_run_out_passes_nothing_over() -> None:
    t = chain_turn()
    t.fallback.cool_down(PRIMARY, START + timedelta(seconds=45))
    assert fallback.plan(t, START + timedelta(seconds=45)).ready == [PRIMARY, SECOND, THIRD]


def test_when_every_model_cools_down_the_whole_chain_is_tried() -> None:
    t = chain_turn()
    for model in (PRIMARY, SECOND, THIRD):
        t.fallback.cool_down(model, START + timedelta(minutes=1))
    plan = fallback.plan(t, START)
    assert plan.ready == [PRIMARY, SECOND, THIRD]
    assert plan.skipped == []


def test_an_answer_ends_the_model_s_cooldown() -> None:
    t = chain_turn()
    t.fallback.cool_down(PRIMARY, START + timedelta(minutes=1))
    t.fallback.answered(PRIMARY)
    assert fallback.plan(t, START).ready[0] == PRIMARY


def test_only_the_refusals_named_in_fallback_on_are_passable() -> None:
    t = chain_turn(fallback_on=["auth", "content_filtered"])
    assert fallback.passable_refusal(t, errors.LLM_AUTH_ERROR) == "auth"
    assert fallback.passable_refusal(t, errors.LLM_CONTENT_FILTERED) == "content_filtered"
    assert fallback.passable_refusal(t, errors.LLM_CONTEXT_TOO_LONG) is None
    assert fallback.passable_refusal(t, None) is None
    assert fallback.passable_refusal(chain_turn(), errors.LLM_AUTH_ERROR) is None


def test_every_fallback_on_value_names_a_refusal() -> None:
    assert set(fallback.REFUSALS) == {
        "auth",
        "invalid_request",
        "context_too_long",
        "content_filtered",
    }


def as_the_workflow_sees_it(error_type: str) -> str | None:
    """The error type of a model call's failure once it has crossed the server: decoded from the
    failure's bytes, a string equal to the constant but not the same object."""
    converter = DataConverter.default
    failure = Failure()
    refused = ApplicationError("refused", type=error_type, non_retryable=True)
    converter.failure_converter.to_failure(refused, converter.payload_converter, failure)
    received = Failure.FromString(failure.SerializeToString())
    decoded = converter.failure_converter.from_failure(received, converter.payload_converter)
    assert isinstance(decoded, ApplicationError)
    return decoded.type


@pytest.mark.parametrize(
    ("fallback_on", "refusal"),
    [
        ("auth", errors.LLM_AUTH_ERROR),
        ("invalid_request", errors.LLM_INVALID_REQUEST),
        ("context_too_long", errors.LLM_CONTEXT_TOO_LONG),
        ("content_filtered", errors.LLM_CONTENT_FILTERED),
    ],
)
def test_each_fallback_on_value_passes_its_own_refusal_and_no_other(
    fallback_on: str, refusal: str
) -> None:
    t = chain_turn(fallback_on=[fallback_on])
    others = set(fallback.REFUSALS.values()) - {refusal} | {errors.LLM_UNAVAILABLE}

    assert fallback.passable_refusal(t, refusal) == fallback_on
    assert fallback.passable_refusal(t, as_the_workflow_sees_it(refusal)) == fallback_on
    assert {other: fallback.passable_refusal(t, other) for other in others} == dict.fromkeys(others)


def test_a_model_with_a_fallback_behind_it_gets_fewer_attempts() -> None:
    assert fallback.retry_policy(None) is MODEL_CALL_RETRY
    cut = fallback.retry_policy(2)
    assert cut.maximum_attempts == 2
    assert cut.initial_interval == MODEL_CALL_RETRY.initial_interval
    assert cut.non_retryable_error_types == MODEL_CALL_RETRY.non_retryable_error_types


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> WorkflowClock:
    return WorkflowClock(monkeypatch, START)


def test_a_failed_model_is_passed_over_for_its_cooldown_then_tried_again(
    clock: WorkflowClock,
) -> None:
    t = chain_turn(fallback_cooldown_s=60)

    fallback.moved_on(t, PRIMARY, "overloaded", 2, None, clock.now)

    assert fallback.plan(t, clock.advance(s=59)).notes() == [
        f"{PRIMARY}: cooling down for 1 s more after failing"
    ]
    assert fallback.plan(t, clock.advance(s=1)).ready == [PRIMARY, SECOND, THIRD]


def test_a_one_second_cooldown_is_kept(clock: WorkflowClock) -> None:
    t = chain_turn(fallback_cooldown_s=1)

    fallback.moved_on(t, PRIMARY, "overloaded", 2, None, clock.now)

    assert fallback.plan(t, clock.advance(s=0.5)).ready == [SECOND, THIRD]


def test_a_cooldown_of_zero_turns_cooldowns_off(clock: WorkflowClock) -> None:
    t = chain_turn(fallback_cooldown_s=0)

    fallback.moved_on(t, PRIMARY, "overloaded", 2, None, clock.now)

    assert fallback.plan(t, clock.now).ready == [PRIMARY, SECOND, THIRD]


def test_moving_on_says_why_for_the_report_and_the_log(
    clock: WorkflowClock, caplog: pytest.LogCaptureFixture
) -> None:
    t = chain_turn(fallback_on=["auth"])
    with caplog.at_level(logging.WARNING, logger=WORKFLOW_LOGGER):
        refused = fallback.moved_on(t, PRIMARY, "bad key", None, "auth", clock.now)
        failed = fallback.moved_on(t, SECOND, "overloaded", 3, None, clock.now)
        retried = fallback.moved_on(t, THIRD, "timed out", None, None, clock.now)

    assert refused == "refused (fallback_on auth): bad key"
    assert failed == "failed after 3 attempts: overloaded"
    assert retried == "failed after its retries: timed out"
    first = caplog.records[0]
    assert (first.message, first.model, first.refusal, first.error) == (
        "model_skipped",
        PRIMARY,
        "auth",
        "bad key",
    )
