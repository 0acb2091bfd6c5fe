"""A turn's life in `python worker.py`, driven as the README prints it: external tools answered by
the `temporal` CLI and `turnkeeper submit`, a cancellation with `temporal workflow cancel`, and
the console's `run`, `pending`, `status`, `approve`, `result`, `transcript` and `watch`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.conftest import SystemStack
from tests.system.steps import (
    HALF_A_DOLLAR,
    LIST,
    PRICEY,
    model_saw,
    result,
    start,
    start_turnkeeper,
    tool_results,
    turn_request,
    wait_for_pending,
    wait_for_state,
    write,
)
from tests.workflows.test_approvals import ASK_USER


async def test_external_tool_results_from_the_temporal_cli_and_turnkeeper_submit(
    stack: SystemStack,
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(
        key,
        [
            fake.tool_calls(
                ("ask_user", {"question": "Which colour?"}),
                ("ask_user", {"question": "Which size?"}),
            ),
            fake.text("Blue, large."),
        ],
    )
    request = turn_request(key) | {"external_tools": [ASK_USER]}
    workflow_id = await start(stack, worker, request)
    waiting = await wait_for_pending(stack, workflow_id, 2)
    assert waiting["state"] == "awaiting_external"
    colour, size = (call["call_id"] for call in waiting["pending"])

    await stack.temporal(
        "workflow", "signal", "--workflow-id", workflow_id, "--name", "submit_tool_result",
        "--input", json.dumps({"call_id": colour, "output": {"colour": "blue"}}),
    )  # fmt: skip
    submitted = await stack.turnkeeper(
        "submit", workflow_id, size, "--output", '{"size": "L"}', worker=worker
    )

    assert f"submitted a result for {size} (ask_user)" in submitted.stdout
    report = await result(stack, workflow_id)
    assert (report["outcome"], report["output"], report["tool_calls"]) == (
        "completed", "Blue, large.", 2,
    )  # fmt: skip
    answers = tool_results(model_saw(stack, key)[-1])
    assert [(a["tool_use_id"], a.get("is_error", False)) for a in answers] == [
        (colour, False), (size, False),
    ]  # fmt: skip
    assert '{\\"colour\\": \\"blue\\"}' in json.dumps(answers[0])
    assert '{\\"size\\": \\"L\\"}' in json.dumps(answers[1])


async def test_cancelled_turns_keep_their_partial_state_and_wait_for_nobody(
    stack: SystemStack,
) -> None:
    # Once a status that said "cancelled" still offered the approve and extend commands of the
    # call and the budget the turn had been waiting on.
    worker = await stack.start_worker()
    approval_key, budget_key = new_key(), new_key()
    stack.fake.script(approval_key, [fake.tool_calls(write("x.md", "x")), fake.text("never")])
    stack.fake.script(budget_key, [fake.tool_calls(LIST, usage=HALF_A_DOLLAR), fake.text("-")])
    paused = turn_request(budget_key, cost_budget_usd=0.4, on_budget_exhausted="pause")
    paused["agent"]["price"] = PRICEY
    approval = await start(stack, worker, turn_request(approval_key))
    budget = await start(stack, worker, paused)
    await wait_for_state(stack, approval, "awaiting_approval")
    await wait_for_state(stack, budget, "awaiting_budget")

    for workflow_id in (approval, budget):
        await stack.temporal("workflow", "cancel", "--workflow-id", workflow_id)

    for workflow_id in (approval, budget):
        cancelled = await wait_for_state(stack, workflow_id, "cancelled")
        assert (cancelled["llm_calls"], cancelled["pending"]) == (1, None), cancelled
        assert cancelled["budget_request"] is None, cancelled
    metadata = await stack.temporal("workflow", "metadata", "--workflow-id", approval)
    details = metadata["queryResult"][0]["currentDetails"]  # what the Web UI shows
    assert "**cancelled**" in details and "turnkeeper approve" not in details, details
    shown = await stack.turnkeeper("status", approval, worker=worker)
    assert "cancelled" in shown.stdout and "waits for" not in shown.stdout, shown.stdout
    transcript = await stack.turnkeeper("transcript", approval, "--json", worker=worker)
    assert [message["role"] for message in json.loads(transcript.stdout)] == ["user", "assistant"]
    outcome = await stack.turnkeeper("result", budget, worker=worker, check=False)
    assert outcome.returncode == 1 and "the turn was cancelled" in outcome.stdout, outcome
    assert "waits for" not in outcome.stdout, outcome.stdout
    assert not (worker.workspace / "x.md").exists()


async def test_the_console_runs_follows_and_reads_a_turn(
    stack: SystemStack, tmp_path: Path
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(key, [fake.tool_calls(write("notes.md", "- a")), fake.text("Saved.")])
    agent_file = tmp_path / "agent.json"
    agent_file.write_text(json.dumps(turn_request(key)["agent"]))

    workflow_id = f"turn-console-{key}"
    following = await start_turnkeeper(
        worker, "run", "--agent", str(agent_file), "--id", workflow_id, "Save my notes"
    )
    [call] = (await wait_for_state(stack, workflow_id, "awaiting_approval"))["pending"]
    waiting, shown = await asyncio.gather(
        stack.turnkeeper("pending", "--task-queue", worker.task_queue, worker=worker),
        stack.turnkeeper("status", workflow_id, worker=worker),
    )
    for listing in (waiting.stdout, shown.stdout):
        assert f"write_file waits for approval (call {call['call_id']}" in listing, listing
        assert f"turnkeeper approve {workflow_id} {call['call_id']}" in listing
    assert workflow_id in waiting.stdout and "awaiting_approval" in shown.stdout

    await stack.turnkeeper("approve", workflow_id, "all", "--approver", "erin", worker=worker)
    followed, _ = await asyncio.wait_for(following.communicate(), timeout=60)
    finished, transcript, watched = await asyncio.gather(
        stack.turnkeeper("result", workflow_id, worker=worker),
        stack.turnkeeper("transcript", workflow_id, worker=worker),
        stack.turnkeeper("watch", workflow_id, worker=worker),
    )

    # `run` showed the pending call as it came, then the report.
    assert following.returncode == 0
    assert f"write_file waits for approval (call {call['call_id']}" in followed.decode()
    for report in (followed.decode(), finished.stdout):
        assert "Saved." in report and "completed" in report, report
    assert "→ write_file" in transcript.stdout and "Saved." in transcript.stdout
    for line in ("iteration 1", "write_file waits for approval", "write_file approved by erin"):
        assert line in watched.stdout, watched.stdout
    assert "turn completed" in watched.stdout
    assert (worker.workspace / "notes.md").read_text() == "- a"
