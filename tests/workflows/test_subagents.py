"""Sub-agents end to end: a lead agent's calls of its sub-agents run as child turns on a real
server, in parallel, with the budgets they inherit, their failures as error results, their
spend in the lead's report, and cancellation reaching them."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import CancelledError
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import QUERY_DECISIONS, QUERY_STATUS, UPDATE_DECIDE
from turnkeeper.contracts.signals import DecideResult, DecisionRecord, TurnStatus
from turnkeeper.contracts.turn import AgentReport, TurnRequest

from tests.conftest import (
    TurnRunner,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
    wait_for_pending,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic


def specialist(name: str, key: str, **agent: Any) -> dict[str, Any]:
    """A sub-agent following script `key`."""
    return {
        "name": name,
        "description": f"The {name}.",
        "agent": {
            "id": f"{name}-agent",
            "model": "anthropic:claude-sonnet-4-6",
            "system_prompt": f"You are the {name}. {fake.script_marker(key)}",
            "tools": ["list_files"],
            **agent,
        },
    }


def tool_results(report: AgentReport, message: int = 2) -> list[ToolResultBlock]:
    return [b for b in report.messages[message].content if isinstance(b, ToolResultBlock)]


async def child_request(turns: TurnRunner, workflow_id: str) -> TurnRequest:
    """The request a child turn was started with, read off its first history event."""
    handle = turns.client.get_workflow_handle(workflow_id)
    async for event in handle.fetch_history_events():
        payload = event.workflow_execution_started_event_attributes.input.payloads[0]
        [value] = await turns.client.data_converter.decode([payload])
        return TurnRequest.model_validate(value)
    raise AssertionError("no history")


async def started_children(handle: WorkflowHandle) -> list[str]:
    ids = []
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            ids.append(event.start_child_workflow_execution_initiated_event_attributes.workflow_id)
    return ids


async def test_two_subagents_run_in_parallel_and_their_spend_flows_up(turns: TurnRunner) -> None:
    key, a, b = new_key(), new_key(), new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("researcher", {"task": "find it"}), ("writer", {"task": "write it"})),
            fake.text("both done"),
        ],
    )
    turns.fake.script(a, [fake.tool_calls(("list_files", {"path": "."})), fake.text("found")])
    turns.fake.script(b, [fake.text("written")])
    request = scripted_request(
        key,
        agent={"subagents": [specialist("researcher", a), specialist("writer", b)]},
        task={"constraints": {"cost_budget_usd": 1.0, "time_budget_ms": 600_000}},
    )
    handle = await turns.start(request)
    report = await handle.result()

    assert [r.text() for r in tool_results(report)] == ["found", "written"]
    assert not any(r.is_error for r in tool_results(report))
    ids = [f"{handle.id}/researcher-1", f"{handle.id}/writer-1"]
    assert await started_children(handle) == ids
    ended = sorted((s.name, s.workflow_id, s.outcome) for s in report.subagents)
    assert ended == [("researcher", ids[0], "completed"), ("writer", ids[1], "completed")]
    # Spend flows up: 2 own model calls, 2 + 1 of the children; the researcher's tool call.
    assert report.llm_calls == 5 and report.tool_calls == 1
    children = {s.name: s for s in report.subagents}
    assert children["researcher"].llm_calls == 2 and children["researcher"].tool_calls == 1
    children_cost = sum(s.cost_usd for s in report.subagents)
    assert 0 < children_cost < report.cost_usd
    # Budgets flow down, split between the two calls of one answer; identity and task id too.
    child = await child_request(turns, ids[0])
    assert child.task.id == f"task-{key}/researcher-1" and child.task.input == "find it"
    constraints = child.task.constraints
    assert constraints.cost_budget_usd is not None and constraints.cost_budget_usd <= 0.5
    assert constraints.time_budget_ms is not None and constraints.time_budget_ms <= 600_000
    assert child.parent is not None and child.parent.workflow_id == handle.id
    # The child's transcript stays in the child: its report carries no messages.
    researcher = turns.client.get_workflow_handle(ids[0], result_type=AgentReport)
    child_report = await researcher.result()
    assert child_report.messages == [] and child_report.output == "found"


async def test_a_failed_child_is_an_error_result_and_the_parent_goes_on(turns: TurnRunner) -> None:
    key, a = new_key(), new_key()
    turns.fake.script(
        key, [fake.tool_calls(("researcher", {"task": "dig"})), fake.text("carried on")]
    )
    # One iteration, and the child's model still asks for a tool: MaxIterationsExceeded.
    turns.fake.script(a, [fake.tool_calls(("list_files", {"path": "."}))])
    request = scripted_request(
        key, agent={"subagents": [specialist("researcher", a, max_iterations=1)]}
    )
    report = await turns.run(request)

    [result] = tool_results(report)
    assert result.is_error and "MaxIterationsExceeded" in result.text()
    assert report.outcome == "completed" and report.output == "carried on"
    [child] = report.subagents
    assert child.outcome == "failed" and child.llm_calls == 1 and child.tool_calls == 1
    assert report.llm_calls == 3


async def test_an_empty_task_is_an_error_result(turns: TurnRunner) -> None:
    key, a = new_key(), new_key()
    turns.fake.script(key, [fake.tool_calls(("researcher", {"task": "  "})), fake.text("ok")])
    report = await turns.run(
        scripted_request(key, agent={"subagents": [specialist("researcher", a)]})
    )

    [result] = tool_results(report)
    assert result.is_error and "non-empty" in result.text()
    assert report.subagents == []


async def test_cancelling_the_parent_cancels_its_child(turns: TurnRunner) -> None:
    key, a = new_key(), new_key()
    turns.fake.script(key, [fake.tool_calls(("writer", {"task": "save it"}))])
    turns.fake.script(
        a, [fake.tool_calls(("write_file", {"path": "x.md", "content": "x"})), fake.text("ok")]
    )
    request = scripted_request(
        key, agent={"subagents": [specialist("writer", a, tools=["write_file"])]}
    )
    handle = await turns.start(request)
    child = turns.client.get_workflow_handle(f"{handle.id}/writer-1")
    await wait_for_pending(child)

    await handle.cancel()

    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    assert isinstance(failure.value.cause, CancelledError)
    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert [(s.name, s.outcome) for s in status.subagents] == [("writer", "cancelled")]
    assert (await child.describe()).status == WorkflowExecutionStatus.CANCELED
    # The child told its partial report as it was cancelled: its model call counts upward.
    [writer] = status.subagents
    assert writer.llm_calls == 1 and writer.cost_usd > 0
    assert status.llm_calls == 2 and status.cost_usd > writer.cost_usd


async def test_a_childs_call_waits_in_the_roots_status_and_is_approved_there(
    turns: TurnRunner,
) -> None:
    key, a, b = new_key(), new_key(), new_key()
    turns.fake.script(key, [fake.tool_calls(("lead", {"task": "delegate"})), fake.text("done")])
    turns.fake.script(a, [fake.tool_calls(("writer", {"task": "save it"})), fake.text("saved")])
    turns.fake.script(
        b, [fake.tool_calls(("write_file", {"path": "deep.md", "content": "x"})), fake.text("ok")]
    )
    writer = specialist("writer", b, tools=["write_file"])
    request = scripted_request(
        key,
        agent={"subagents": [specialist("lead", a, tools=[], subagents=[writer])]},
        task={"constraints": {"time_budget_ms": 600_000}},
    )
    handle = await turns.start(request)
    status = await wait_for_pending(handle)

    [call] = status.pending
    grandchild = f"{handle.id}/lead-1/writer-1"
    assert (call.tool, call.workflow_id, call.agent_id) == (
        "write_file",
        grandchild,
        "writer-agent",
    )
    assert status.state == "awaiting_approval"
    # The decide update sent to the root reaches the grandchild, where the call waits.
    result = await handle.execute_update(
        UPDATE_DECIDE,
        {"call_id": call.call_id, "approved": True, "approver": "alice"},
        result_type=DecideResult,
    )
    assert [(d.call_id, d.approved) for d in result.decisions] == [(call.call_id, True)]

    report = await handle.result()
    assert (turns.workspace / "deep.md").read_text() == "x"
    assert report.output == "done" and report.tool_calls == 1
    deep = turns.client.get_workflow_handle(grandchild)
    decisions = await deep.query(QUERY_DECISIONS, result_type=list[DecisionRecord])
    assert [(d.approver, d.approved) for d in decisions] == [("alice", True)]


async def test_a_tree_waiting_in_a_child_finishes_on_a_new_worker(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    """The worker that started a lead and its writer stops while the writer's call waits; a new
    worker replays both and takes the approval sent to the lead."""
    key, a = new_key(), new_key()
    fake_anthropic.script(
        key, [fake.tool_calls(("writer", {"task": "save it"})), fake.text("done")]
    )
    fake_anthropic.script(
        a, [fake.tool_calls(("write_file", {"path": "y.md", "content": "y"})), fake.text("saved")]
    )
    request = scripted_request(
        key, agent={"subagents": [specialist("writer", a, tools=["write_file"])]}
    )
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    async with running_worker(client, settings, fake_anthropic):
        handle = await client.start_workflow(
            "AgentTurnWorkflow", request, id=f"turn-{key}", task_queue=settings.task_queue,
            result_type=AgentReport,
        )  # fmt: skip
        [call] = (await wait_for_pending(handle)).pending

    async with running_worker(client, settings, fake_anthropic):
        await handle.execute_update(UPDATE_DECIDE, {"call_id": call.call_id, "approved": True})
        report = await handle.result()

    assert report.output == "done"
    assert [(s.name, s.outcome) for s in report.subagents] == [("writer", "completed")]
    assert (settings.workspace / "y.md").read_text() == "y"
