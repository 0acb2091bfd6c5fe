"""Every kind of approval the README documents, in `python worker.py`: an edit through the `decide`
update of the `temporal` CLI, a rejection, `call_id: "*"`, a standing approval (`remember`,
`turnkeeper standing` / `revoke`) and an approval that times out."""

from __future__ import annotations

import json

import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.conftest import SystemStack
from tests.system.steps import (
    connect_as_user,
    model_saw,
    refused_update,
    result,
    start,
    tool_results,
    turn_request,
    update,
    wait_for_pending,
    wait_for_state,
    wait_for_status,
    write,
)


async def test_an_edited_approval_through_the_decide_update(stack: SystemStack) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(key, [fake.tool_calls(write("draft.md", "draft")), fake.text("Saved.")])
    workflow_id = await start(stack, worker, turn_request(key))
    [call] = (await wait_for_state(stack, workflow_id, "awaiting_approval"))["pending"]

    edited = {"path": "reviewed.md", "content": "reviewed"}
    decision = {"call_id": call["call_id"], "approved": True, "approver": "carol", "input": edited}
    answer = await update(stack, workflow_id, "decide", decision)

    [applied] = answer["decisions"]
    assert (applied["call_id"], applied["approver"], applied["edited"]) == (
        call["call_id"], "carol", True,
    )  # fmt: skip
    report = await result(stack, workflow_id)
    assert report["outcome"] == "completed"
    assert (worker.workspace / "reviewed.md").read_text() == "reviewed"
    assert not (worker.workspace / "draft.md").exists()
    [told] = tool_results(model_saw(stack, key)[-1])
    assert "edited before approval by carol" in json.dumps(told)


async def test_a_rejection_reaches_the_model_as_an_error_result(stack: SystemStack) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(key, [fake.tool_calls(write("secrets.md", "x")), fake.text("I will not.")])
    workflow_id = await start(stack, worker, turn_request(key))
    [call] = (await wait_for_state(stack, workflow_id, "awaiting_approval"))["pending"]

    rejected = await stack.turnkeeper(
        "reject", workflow_id, call["call_id"], "--reason", "not that file", "--approver", "dan",
        worker=worker,
    )  # fmt: skip

    assert f"rejected {call['call_id']} (write_file)" in rejected.stdout
    report = await result(stack, workflow_id)
    assert (report["outcome"], report["tool_calls"], report["output"]) == (
        "completed", 0, "I will not.",
    )  # fmt: skip
    assert not (worker.workspace / "secrets.md").exists()
    [told] = tool_results(model_saw(stack, key)[-1])
    assert told["is_error"] is True
    assert "rejected by dan: not that file" in json.dumps(told)
    [decision] = report["decisions"]
    assert (decision["approved"], decision["reason"]) == (False, "not that file")


async def test_a_star_decision_approves_every_pending_call(stack: SystemStack) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(
        key, [fake.tool_calls(write("a.md", "A"), write("b.md", "B")), fake.text("Both saved.")]
    )
    workflow_id = await start(stack, worker, turn_request(key))
    await wait_for_pending(stack, workflow_id, 2)
    await stack.temporal(
        "workflow", "signal", "--workflow-id", workflow_id, "--name", "approve",
        "--input", json.dumps({"call_id": "*", "approved": True, "approver": "bob"}),
    )  # fmt: skip

    report = await result(stack, workflow_id)
    assert (report["outcome"], report["tool_calls"]) == ("completed", 2)
    assert [d["approver"] for d in report["decisions"]] == ["bob", "bob"]
    assert (worker.workspace / "a.md").read_text() == "A"
    assert (worker.workspace / "b.md").read_text() == "B"


async def test_a_standing_approval_serves_later_turns_until_revoked(
    stack: SystemStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await stack.start_worker()
    agent_id = f"agent-{new_key()}"
    keys = [new_key() for _ in range(3)]
    for number, key in enumerate(keys):
        stack.fake.script(key, [fake.tool_calls(write(f"{number}.md", "n")), fake.text("Done.")])

    def request(key: str) -> dict[str, object]:
        asked = turn_request(key)
        asked["agent"]["id"] = agent_id  # type: ignore[index]
        return asked

    first = await start(stack, worker, request(keys[0]))
    [call] = (await wait_for_state(stack, first, "awaiting_approval"))["pending"]
    await stack.turnkeeper(
        "approve", first, call["call_id"], "--remember", "--approver", "dana", worker=worker
    )
    await result(stack, first)
    listed = await stack.turnkeeper("standing", agent_id, worker=worker)
    assert "write_file  approved by dana" in listed.stdout

    client = await connect_as_user(worker, monkeypatch)
    second = await turnkeeper.start_turn(client, request(keys[1]))
    report = await second.result()
    [decision] = report.decisions
    assert (decision.standing, decision.approved, decision.tool) == (True, True, "write_file")
    assert (worker.workspace / "1.md").exists()

    revoked = await stack.turnkeeper("revoke", agent_id, "write_file", worker=worker)
    assert f"revoked the standing approval of write_file for {agent_id}" in revoked.stdout
    listed = await stack.turnkeeper("standing", agent_id, worker=worker)
    assert f"{agent_id} has no standing approvals." in listed.stdout
    third = await turnkeeper.start_turn(client, request(keys[2]))
    asked = await wait_for_state(stack, third.id, "awaiting_approval")
    await third.reject(asked["pending"][0]["call_id"], reason="asked again, as it should")
    assert not (await third.result()).decisions[0].approved


async def test_an_approval_that_times_out_counts_as_a_rejection(stack: SystemStack) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(key, [fake.tool_calls(write("late.md", "x")), fake.text("Nobody answered.")])
    workflow_id = await start(stack, worker, turn_request(key, approval_timeout_s=1))

    report = await result(stack, workflow_id)

    assert (report["outcome"], report["tool_calls"]) == ("completed", 0)
    [decision] = report["decisions"]
    assert (decision["approved"], decision["reason"]) == (False, "approval timed out")
    [told] = tool_results(model_saw(stack, key)[-1])
    assert told["is_error"] is True and "approval timed out" in json.dumps(told)
    assert not (worker.workspace / "late.md").exists()


async def test_a_decision_from_outside_agent_approvers_is_refused_and_listed(
    stack: SystemStack,
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(key, [fake.tool_calls(write("plan.md", "p")), fake.text("Saved.")])
    request = turn_request(key)
    request["agent"]["approvers"] = ["alice"]
    workflow_id = await start(stack, worker, request)
    [call] = (await wait_for_state(stack, workflow_id, "awaiting_approval"))["pending"]
    by_mallory = {"call_id": call["call_id"], "approved": True, "approver": "mallory"}

    refused = await refused_update(stack, workflow_id, "decide", by_mallory)
    await stack.temporal(
        "workflow", "signal", "--workflow-id", workflow_id, "--name", "approve",
        "--input", json.dumps(by_mallory),
    )  # fmt: skip
    listed = await wait_for_status(
        stack, workflow_id, lambda seen: bool(seen["refused_decisions"]), "a refused decision"
    )

    assert "'mallory' may not decide" in refused
    [ignored] = listed["refused_decisions"]
    assert (ignored["approver"], listed["state"]) == ("mallory", "awaiting_approval")
    shown = await stack.turnkeeper("status", workflow_id, worker=worker)
    assert "refused decisions" in shown.stdout and "from mallory" in shown.stdout
    await update(stack, workflow_id, "decide", by_mallory | {"approver": "alice"})
    report = await result(stack, workflow_id)
    assert [d["approver"] for d in report["decisions"]] == ["alice"]
