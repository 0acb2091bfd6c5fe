"""The fallback chain as deterministic state: which models a call may try, which it passes over
and why, which refusals it may move past. (`moved_on` logs through `workflow.logger`, which
needs a workflow: the cooldown it sets is tested through the server in test_providers.py.)"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from turnkeeper.contracts import errors
from turnkeeper.workflows import fallback
from turnkeeper.workflows.activity_options import MODEL_CALL_RETRY
from turnkeeper.workflows.turn_state import Turn

from tests.unit.builders import START, request, turn

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
    t.cool_down(PRIMARY, START + timedelta(seconds=45))
    plan = fallback.plan(t, START)
    assert plan.ready == [SECOND, THIRD]
    assert plan.notes() == [f"{PRIMARY}: cooling down for 45 s more after failing"]


def test_a_cooldown_that_has_run_out_passes_nothing_over() -> None:
    t = chain_turn()
    t.cool_down(PRIMARY, START + timedelta(seconds=45))
    assert fallback.plan(t, START + timedelta(seconds=45)).ready == [PRIMARY, SECOND, THIRD]


def test_when_every_model_cools_down_the_whole_chain_is_tried() -> None:
    t = chain_turn()
    for model in (PRIMARY, SECOND, THIRD):
        t.cool_down(model, START + timedelta(minutes=1))
    plan = fallback.plan(t, START)
    assert plan.ready == [PRIMARY, SECOND, THIRD]
    assert plan.skipped == []


def test_an_answer_ends_the_model_s_cooldown() -> None:
    t = chain_turn()
    t.cool_down(PRIMARY, START + timedelta(minutes=1))
    t.model_answered(PRIMARY)
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


def test_a_model_with_a_fallback_behind_it_gets_fewer_attempts() -> None:
    assert fallback.retry_policy(None) is MODEL_CALL_RETRY
    cut = fallback.retry_policy(2)
    assert cut.maximum_attempts == 2
    assert cut.initial_interval == MODEL_CALL_RETRY.initial_interval
    assert cut.non_retryable_error_types == MODEL_CALL_RETRY.non_retryable_error_types
