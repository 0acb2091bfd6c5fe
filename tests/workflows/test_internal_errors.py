"""Our own defects are not outages: an activity that fails with a bug of ours fails the turn at
once with TurnInternalError and its partial report, where it used to be retried six times over
a minute and reported as LLMUnavailable. Provider errors keep their ladder (test_model_errors)."""

from __future__ import annotations

import turnkeeper
from tests.conftest import TurnRunner, failure_of, new_key, scripted_request
from tests.fakes import fake_anthropic as fake


async def test_a_token_count_without_input_tokens_is_a_turn_internal_error(
    turns: TurnRunner,
) -> None:
    # The case: a count_tokens reply lacking `input_tokens` made the budget check
    # multiply None by a price, a TypeError of ours.
    key = new_key()
    turns.fake.script(key, [fake.text("never reached")])
    turns.fake.script_count_tokens(key, fake.RawReply(200, b"{}"))
    request = scripted_request(key, task={"constraints": {"cost_budget_usd": 1.0}})

    error, partial = await failure_of(turns, request)

    assert error.type == "TurnInternalError"
    assert "model_call activity: TypeError" in error.message
    assert (partial.outcome, partial.llm_calls, len(partial.messages)) == ("failed", 0, 1)
    counts = [r for r in turns.fake.requests if r.script_key == key and r.path.endswith("tokens")]
    assert len(counts) == 1  # failed once, never retried
    assert turns.fake.requests_for(key) == []  # and nothing was billed


async def test_the_public_client_raises_turn_internal_error(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("never reached")])
    turns.fake.script_count_tokens(key, fake.RawReply(200, b'{"input_tokens": "many"}'))
    handle = await turnkeeper.start_turn(
        turns.client,
        scripted_request(key, task={"constraints": {"cost_budget_usd": 1.0}}),
        id=f"turn-{key}",
        task_queue=turns.task_queue,
    )
    try:
        await handle.result()
    except turnkeeper.TurnInternalError as failure:
        assert failure.report is not None and failure.report.outcome == "failed"
    else:
        raise AssertionError("the turn completed")
