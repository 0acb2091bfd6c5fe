"""Budgets (time, cost, tool interactions, iterations) and the autonomy boundary, each crossed on
purpose, with the failure type, its message and the partial report checked."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import CancelledError
from turnkeeper.contracts.names import ACTIVITY_MODEL_CALL, QUERY_STATUS, QUERY_TRANSCRIPT
from turnkeeper.contracts.signals import TurnStatus

from tests.conftest import (
    TurnRunner,
    failure_of,
    failure_of_turn,
    new_key,
    scripted_request,
    wait_for_pending,
)
from tests.fakes import fake_anthropic as fake
from tests.support import history_facts

LIST = ("list_files", {"path": "."})
# A budget that a first model call, a tool call and the workflow tasks between them fit in on a
# slow, shared machine; and model answers that no budget here waits for.
BUDGET_MS = 5000
FIRST_CALL_S = 0.5
NEVER_S = 30.0


async def model_call_timeouts_ms(handle: WorkflowHandle) -> list[float]:
    """The start-to-close timeout each model call was scheduled with, per the turn's history."""
    calls = await history_facts.scheduled(handle, ACTIVITY_MODEL_CALL)
    return [call.start_to_close_timeout.ToMilliseconds() for call in calls]


async def test_a_later_model_call_is_cut_off_when_the_time_budget_runs_out(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.slow(fake.tool_calls(LIST), FIRST_CALL_S),
            fake.slow(fake.tool_calls(LIST), NEVER_S),
            fake.text("never reached"),
        ],
    )
    request = scripted_request(key, task={"constraints": {"time_budget_ms": BUDGET_MS}})
    handle = await turns.start(request)

    error, partial = await failure_of_turn(handle)

    assert error.type == "TurnBudgetExceeded", error.message
    assert error.message.startswith(f"time budget of {BUDGET_MS} ms spent: ")
    assert (partial.llm_calls, partial.tool_calls, partial.iterations) == (1, 1, 2)
    assert len(turns.fake.requests_for(key)) == 2
    # The second call had only what was left as its timeout, not the whole budget again.
    first, second = await model_call_timeouts_ms(handle)
    assert first <= BUDGET_MS and second <= first - FIRST_CALL_S * 1000, (first, second)


async def test_a_model_call_gets_only_the_time_that_is_left(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.slow(fake.text("too late"), NEVER_S)])
    request = scripted_request(key, task={"constraints": {"time_budget_ms": BUDGET_MS}})
    handle = await turns.start(request)

    error, partial = await failure_of_turn(handle)

    assert error.type == "TurnBudgetExceeded"
    assert f"time budget of {BUDGET_MS} ms spent" in error.message
    assert partial.llm_calls == 0
    # The activity timed out after the budget, not after the default ten minutes, and was not
    # retried past it.
    assert len(turns.fake.requests_for(key)) == 1
    [timeout] = await model_call_timeouts_ms(handle)
    assert timeout <= BUDGET_MS


PRICEY = {"input_per_mtok": 10_000.0, "output_per_mtok": 100_000.0}  # $0.01 / $0.1 a token


async def test_cost_budget_crossed_by_one_calls_output(turns: TurnRunner) -> None:
    key = new_key()
    usage = {"input_tokens": 20, "output_tokens": 3}
    turns.fake.script(
        key, [fake.tool_calls(LIST, usage=usage), fake.text("never reached", usage=usage)]
    )
    request = scripted_request(
        key, agent={"price": PRICEY}, task={"constraints": {"cost_budget_usd": 0.4}}
    )

    error, partial = await failure_of(turns, request)

    # Hand computation: 20 × $0.01 + 3 × $0.1 = $0.50 for the first call.
    assert partial.cost_usd == pytest.approx(0.5)
    assert error.type == "TurnBudgetExceeded"
    assert error.message.startswith("cost budget of $0.4 spent: $0.500000 so far")
    # The overspend is at most the one call's output ($0.30).
    assert partial.cost_usd - 0.4 <= 3 * 0.1
    assert len(turns.fake.requests_for(key)) == 1


async def test_a_call_whose_input_alone_would_overspend_is_not_made(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(LIST, usage={"input_tokens": 90, "output_tokens": 0}),
            fake.text("never reached"),
        ],
    )
    request = scripted_request(
        key,
        agent={"price": {"input_per_mtok": 10_000.0, "output_per_mtok": 0.0}},
        task={"constraints": {"cost_budget_usd": 1.0}},
    )

    error, partial = await failure_of(turns, request)

    assert partial.cost_usd == pytest.approx(0.9)
    assert error.type == "TurnBudgetExceeded"
    assert "cost budget of $1 spent: $0.900000 so far" in error.message
    assert "model call 2 was not made: its input alone" in error.message
    assert "$0.100000 left" in error.message
    assert len(turns.fake.requests_for(key)) == 1  # the second call never reached the API


async def test_cost_budget_on_a_model_with_no_known_price_is_refused(turns: TurnRunner) -> None:
    key = new_key()
    request = scripted_request(
        key,
        agent={"model": "anthropic:claude-unreleased-9"},
        task={"constraints": {"cost_budget_usd": 1.0}},
    )

    error, _ = await failure_of(turns, request)

    assert error.type == "InvalidTurnRequest"
    assert "no price is known for 'anthropic:claude-unreleased-9'" in error.message


async def test_spent_tool_interactions_leave_the_model_without_tools(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(LIST), fake.text("Here is what I found.")])
    request = scripted_request(key, task={"constraints": {"max_tool_interactions": 1}})

    report = await turns.run(request)

    assert report.output == "Here is what I found."
    first, second = turns.fake.requests_for(key)
    assert {t["name"] for t in first.body["tools"]} >= {"list_files", "read_file"}
    assert "tools" not in second.body


async def test_a_tool_called_after_the_tool_interactions_are_spent_never_runs(
    turns: TurnRunner,
) -> None:
    key = new_key()
    write = ("write_file", {"path": "x.md", "content": "x"})
    turns.fake.script(key, [fake.tool_calls(LIST), fake.tool_calls(write), fake.text("done")])
    request = scripted_request(key, task={"constraints": {"max_tool_interactions": 1}})

    report = await turns.run(request)

    assert report.output == "done"
    assert not (turns.workspace / "x.md").exists()
    second, third = turns.fake.requests_for(key)[1:]
    assert "tools" not in second.body
    [answer] = [b for b in third.body["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert answer["is_error"] and "Unknown tool 'write_file'" in str(answer["content"])


async def test_disallowed_tool_is_never_offered_and_never_runs(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key, [fake.tool_calls(("write_file", {"path": "x.md", "content": "x"})), fake.text("-")]
    )
    request = scripted_request(key, task={"constraints": {"allowed_tools": ["read_file"]}})

    error, partial = await failure_of(turns, request)

    assert error.type == "AutonomyBoundaryViolation"
    assert "'write_file'" in error.message
    [offered] = [t["name"] for t in turns.fake.requests_for(key)[0].body["tools"]]
    assert offered == "read_file"
    assert not (turns.workspace / "x.md").exists()
    assert partial.tool_calls == 0 and partial.llm_calls == 1


async def test_cancelling_a_turn_keeps_its_partial_state_readable(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key, [fake.tool_calls(("write_file", {"path": "x.md", "content": "x"})), fake.text("-")]
    )
    handle = await turns.start(scripted_request(key))
    await wait_for_pending(handle)

    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()

    assert isinstance(failure.value.cause, CancelledError)
    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert status.state == "cancelled" and status.llm_calls == 1
    transcript = await handle.query(QUERY_TRANSCRIPT)
    assert [m["role"] for m in transcript] == ["user", "assistant"]


async def test_failed_turn_status_and_transcript_stay_readable(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(LIST)] * 2)
    handle = await turns.start(scripted_request(key, agent={"max_iterations": 2}))
    with pytest.raises(WorkflowFailureError):
        await handle.result()

    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert (status.state, status.llm_calls, status.tool_calls) == ("failed", 2, 2)
    assert len(await handle.query(QUERY_TRANSCRIPT)) == 5
    await asyncio.sleep(0)
