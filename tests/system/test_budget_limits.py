"""Budgets in `python worker.py`, as a user meets them: the time and cost budgets and
`max_iterations` failing the turn with their typed errors and partial reports, spent tool
interactions leaving the model without tools, and a cost budget paused and extended through the
`temporal` CLI's `extend_budget` update."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.conftest import SystemStack
from tests.system.steps import (
    HALF_A_DOLLAR,
    LIST,
    PRICEY,
    connect_as_user,
    result,
    start,
    turn_request,
    update,
    wait_for_state,
)


async def test_a_time_budget_fails_the_turn_with_turn_budget_exceeded(
    stack: SystemStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(key, [fake.slow(fake.text("far too late"), 30)])
    workflow_id = await start(stack, worker, turn_request(key, time_budget_ms=1000))

    client = await connect_as_user(worker, monkeypatch)
    with pytest.raises(turnkeeper.TurnBudgetExceeded) as failure:
        await turnkeeper.turn(client, workflow_id).result()

    assert failure.value.message.startswith("time budget of 1000 ms spent")
    assert failure.value.report is not None and failure.value.report.llm_calls == 0
    # Cut off, never retried past the budget. On a loaded machine (the suite's parallel
    # processes) the second can be spent before the worker's activity reaches the model at all.
    assert len(stack.fake.requests_for(key)) <= 1


async def test_a_cost_budget_fails_turnkeeper_run_and_watch_shows_why(
    stack: SystemStack, tmp_path: Path
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(
        key, [fake.tool_calls(LIST, usage=HALF_A_DOLLAR), fake.text("never", usage=HALF_A_DOLLAR)]
    )
    agent = turn_request(key)["agent"] | {"price": PRICEY}
    agent_file = tmp_path / "agent.json"
    agent_file.write_text(json.dumps(agent))

    workflow_id = f"turn-pricey-{key}"
    done = await stack.turnkeeper(
        "run", "--agent", str(agent_file), "--cost-budget-usd", "0.4", "--json", "--id",
        workflow_id, "List the files", worker=worker, check=False,
    )  # fmt: skip

    assert done.returncode == 1, done.stderr
    shown = json.loads(done.stdout)
    assert shown["failure"]["type"] == "TurnBudgetExceeded"
    assert shown["failure"]["message"].startswith("cost budget of $0.4 spent: $0.500000 so far")
    assert (shown["report"]["llm_calls"], shown["report"]["cost_usd"]) == (1, 0.5)
    assert len(stack.fake.requests_for(key)) == 1
    watched = await stack.turnkeeper("watch", workflow_id, worker=worker, check=False)
    assert watched.returncode == 1
    assert "turn failed: TurnBudgetExceeded: cost budget of $0.4 spent" in watched.stdout


async def test_spent_tool_interactions_leave_the_model_without_tools(stack: SystemStack) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(key, [fake.tool_calls(LIST), fake.text("Here is what I found.")])

    done = await stack.turnkeeper(
        "run", "--model", "anthropic:claude-sonnet-4-6", "--system", f"Be brief. [script:{key}]",
        "--max-tool-interactions", "1", "--json", "What is in the workspace?", worker=worker,
    )  # fmt: skip

    report = json.loads(done.stdout)
    assert (report["output"], report["tool_calls"]) == ("Here is what I found.", 1)
    first, second = stack.fake.requests_for(key)
    assert "list_files" in {tool["name"] for tool in first.body["tools"]}
    assert "tools" not in second.body  # the last call could only answer


async def test_max_iterations_fails_the_turn_with_max_iterations_exceeded(
    stack: SystemStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(key, [fake.tool_calls(LIST)] * 3)
    request = turn_request(key)
    request["agent"]["max_iterations"] = 2

    client = await connect_as_user(worker, monkeypatch)
    handle = await turnkeeper.start_turn(client, request)
    with pytest.raises(turnkeeper.MaxIterationsExceeded) as failure:
        await handle.result()

    report = failure.value.report
    assert report is not None
    assert (report.iterations, report.llm_calls, report.tool_calls) == (2, 2, 2)
    assert "2" in failure.value.message
    assert (await handle.status()).state == "failed"


async def test_a_paused_cost_budget_extended_through_the_temporal_cli(stack: SystemStack) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(
        key,
        [fake.tool_calls(LIST, usage=HALF_A_DOLLAR), fake.text("Listed.", usage=HALF_A_DOLLAR)],
    )
    request = turn_request(key, cost_budget_usd=0.4, on_budget_exhausted="pause")
    request["agent"]["price"] = PRICEY
    workflow_id = await start(stack, worker, request)

    paused = await wait_for_state(stack, workflow_id, "awaiting_budget")
    assert paused["budget_request"]["budget"] == "cost"
    assert "cost budget of $0.4 spent" in paused["budget_request"]["message"]
    extension = {"cost_usd": 1, "approver": "alice", "reason": "worth it"}
    answer = await update(stack, workflow_id, "extend_budget", extension)

    assert answer["limits"]["cost_budget_usd"] == pytest.approx(1.4)
    report = await result(stack, workflow_id)
    assert (report["outcome"], report["output"], report["llm_calls"]) == ("completed", "Listed.", 2)
    [granted] = report["budget_extensions"]
    assert (granted["approver"], granted["reason"], granted["cost_usd"]) == ("alice", "worth it", 1)
    assert [line["budget"] for line in worker.events("budget_extended")] == ["cost"]
