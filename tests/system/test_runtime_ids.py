"""The ids the runtime owns, attacked as a second user of the namespace would: with the raw
`temporal` CLI against `python worker.py`. Each attack of issue 37 fails at once (no model call)
while the victim's turn finishes untouched: a turn at an agent's approval cache, at a tenant's
ledger, at a lead's `<id>/writer-1`, a turn that names someone else's lead as its `parent`, and a
fork of a sub-agent's turn. A squatter left at a ledger's id from before (an `AgentTurnWorkflow`
on a queue no worker polls) is named by the tenant's turns, and other tenants go on."""

from __future__ import annotations

import json
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.approvals import approval_cache_id
from turnkeeper.contracts.tenants import ledger_id

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.steps import wait_for_pending
from tests.system.test_approvals_and_budgets import result, status

SONNET = "anthropic:claude-sonnet-4-6"


def writes(stack: SystemStack, key: str, agent_id: str = "victim-agent", **fields: Any) -> dict:
    """A turn that asks to write `<key>.md` (approval needed), then answers."""
    stack.fake.script(
        key,
        [fake.tool_calls(("write_file", {"path": f"{key}.md", "content": "x"})), fake.text("ok")],
    )
    return {
        "agent": {
            "id": agent_id,
            "model": SONNET,
            "system_prompt": f"You write. {fake.script_marker(key)}",
            "tools": ["write_file"],
        },
        "task": {
            "id": f"task-{key}",
            "input": "Save it.",
            "constraints": {"require_approval": ["write_file"]},
        },
        **fields,
    }


def answers(stack: SystemStack, key: str, **fields: Any) -> dict[str, Any]:
    """A turn of one model call."""
    stack.fake.script(key, [fake.text("Done.")])
    agent = {"id": "victim-agent", "model": SONNET, "system_prompt": fake.script_marker(key)}
    return {"agent": agent, "task": {"id": f"task-{key}", "input": "Go."}, **fields}


async def raw_start(
    stack: SystemStack, queue: str, workflow_id: str, request: dict[str, Any]
) -> None:
    """The attacker's start: the raw `temporal` CLI, past every check of turnkeeper's clients."""
    await stack.temporal(
        "workflow", "start", "--type", "AgentTurnWorkflow", "--task-queue", queue,
        "--workflow-id", workflow_id, "--input", json.dumps(request),
    )  # fmt: skip


async def refused(stack: SystemStack, workflow_id: str) -> ApplicationError:
    """How a turn that must fail failed: its typed error."""
    with pytest.raises(WorkflowFailureError) as failed:
        await stack.client.get_workflow_handle(workflow_id).result()
    error = failed.value.cause
    assert isinstance(error, ApplicationError) and error.non_retryable, error
    return error


async def approve(stack: SystemStack, workflow_id: str, call_id: str, **fields: Any) -> None:
    decision = {"call_id": call_id, "approved": True, "approver": "alice", **fields}
    await stack.temporal(
        "workflow", "signal", "--workflow-id", workflow_id, "--name", "approve",
        "--input", json.dumps(decision),
    )  # fmt: skip


async def approve_and_finish(stack: SystemStack, workflow_id: str, **fields: Any) -> dict:
    waiting = await wait_for_pending(stack, workflow_id, 1)
    for call in waiting["pending"]:
        await approve(stack, workflow_id, call["call_id"], **fields)
    return await result(stack, workflow_id)


async def test_a_turn_at_an_agents_approval_cache_fails_and_its_approvals_go_on(
    stack: SystemStack,
) -> None:
    worker = await stack.start_worker()
    agent_id = f"victim-{new_key()}"
    squat_key = new_key()
    await raw_start(
        stack, worker.task_queue, approval_cache_id(agent_id), answers(stack, squat_key)
    )
    error = await refused(stack, approval_cache_id(agent_id))
    assert error.type == "InvalidTurnRequest" and "an agent's standing approvals" in error.message
    assert stack.fake.requests_for(squat_key) == []

    # The victim approves with `remember`; the agent's next turn runs on the standing approval.
    first = f"turn-{new_key()}"
    await raw_start(stack, worker.task_queue, first, writes(stack, new_key(), agent_id))
    report = await approve_and_finish(stack, first, remember=True)
    assert (report["outcome"], report["tool_calls"]) == ("completed", 1)
    cache = await stack.client.get_workflow_handle(approval_cache_id(agent_id)).describe()
    assert cache.workflow_type == "ApprovalCacheWorkflow"
    second = f"turn-{new_key()}"
    await raw_start(stack, worker.task_queue, second, writes(stack, new_key(), agent_id))
    report = await result(stack, second)
    assert [d["approver"] for d in report["decisions"]] == ["standing approval"]


async def test_a_turn_at_a_tenants_ledger_fails_and_the_tenant_is_billed_as_before(
    stack: SystemStack,
) -> None:
    worker = await stack.start_worker()
    tenant = f"acme-{new_key()}"
    squat_key = new_key()
    await raw_start(stack, worker.task_queue, ledger_id(tenant), answers(stack, squat_key))
    error = await refused(stack, ledger_id(tenant))
    assert error.type == "InvalidTurnRequest" and "a tenant's spend ledger" in error.message
    assert stack.fake.requests_for(squat_key) == []

    victim = f"turn-{new_key()}"
    await raw_start(stack, worker.task_queue, victim, answers(stack, new_key(), tenant=tenant))
    report = await result(stack, victim)
    assert (report["outcome"], report["tenant"]) == ("completed", tenant)
    ledger = await stack.client.get_workflow_handle(ledger_id(tenant)).describe()
    assert ledger.workflow_type == "TenantLedgerWorkflow"


def lead_with_writer(stack: SystemStack, writer_key: str, **fields: Any) -> dict[str, Any]:
    """A lead that calls its sub-agent `writer` once (which asks to write a file), then ends."""
    key = new_key()
    stack.fake.script(key, [fake.tool_calls(("writer", {"task": "save it"})), fake.text("done")])
    writer = writes(stack, writer_key, "writer-agent")
    return {
        "agent": {
            "id": "lead-agent",
            "model": SONNET,
            "system_prompt": f"You lead. {fake.script_marker(key)}",
            "subagents": [{"name": "writer", "description": "Writes.", "agent": writer["agent"]}],
        },
        "task": writer["task"] | {"id": f"task-{key}"},
        **fields,
    }


async def test_a_turn_at_a_leads_sub_agent_id_fails_and_the_sub_agent_runs(
    stack: SystemStack,
) -> None:
    worker = await stack.start_worker()
    lead = f"turn-lead-{new_key()}"
    squat_key = new_key()
    await raw_start(stack, worker.task_queue, f"{lead}/writer-1", answers(stack, squat_key))
    error = await refused(stack, f"{lead}/writer-1")
    assert error.type == "InvalidTurnRequest" and "sub-agent and session turns" in error.message
    assert stack.fake.requests_for(squat_key) == []

    await raw_start(stack, worker.task_queue, lead, lead_with_writer(stack, new_key()))
    report = await approve_and_finish(stack, lead)
    assert report["outcome"] == "completed"
    assert [(s["workflow_id"], s["outcome"]) for s in report["subagents"]] == [
        (f"{lead}/writer-1", "completed")
    ]


async def test_a_parent_set_by_a_caller_fails_and_the_lead_lists_only_its_own_call(
    stack: SystemStack,
) -> None:
    worker = await stack.start_worker()
    lead = f"turn-{new_key()}"
    await raw_start(stack, worker.task_queue, lead, writes(stack, new_key()))
    [own] = (await wait_for_pending(stack, lead, 1))["pending"]

    intruder, intruder_key = f"turn-{new_key()}", new_key()
    parent = {"workflow_id": lead, "call_id": own["call_id"], "depth": 1}
    await raw_start(stack, worker.task_queue, intruder, writes(stack, intruder_key, parent=parent))
    error = await refused(stack, intruder)
    assert error.type == "InvalidTurnRequest" and "parent: is set by the runtime" in error.message
    assert stack.fake.requests_for(intruder_key) == []

    # A note forged with the CLI, as if from a child the lead would start, is ignored too.
    forged = own | {"call_id": "toolu_forged", "workflow_id": f"{lead}/writer-1"}
    await stack.temporal(
        "workflow", "signal", "--workflow-id", lead, "--name", "subagent_pending",
        "--input", json.dumps({"workflow_id": f"{lead}/writer-1", "pending": [forged]}),
    )  # fmt: skip
    assert [c["call_id"] for c in (await status(stack, lead))["pending"]] == [own["call_id"]]
    report = await approve_and_finish(stack, lead)
    assert (report["outcome"], report["tool_calls"]) == ("completed", 1)


async def test_a_fork_of_a_sub_agents_turn_is_a_root_turn_and_the_lead_lists_one_call(
    stack: SystemStack,
) -> None:
    worker = await stack.start_worker()
    lead, writer_key = f"turn-lead-{new_key()}", new_key()
    await raw_start(stack, worker.task_queue, lead, lead_with_writer(stack, writer_key))
    [waiting] = (await wait_for_pending(stack, lead, 1))["pending"]
    child = f"{lead}/writer-1"
    assert waiting["workflow_id"] == child

    forked = await stack.turnkeeper("fork", child, "--at-iteration", "1", worker=worker)
    fork_id = forked.stdout.strip().splitlines()[-1]
    assert fork_id == f"{lead}-writer-1-fork-1"
    [fork_call] = (await wait_for_pending(stack, fork_id, 1))["pending"]
    assert fork_call["call_id"] == waiting["call_id"]  # the same script: the same call id
    # The fork is nobody's sub-agent: the lead still lists its own child's call alone.
    assert (await status(stack, lead))["pending"] == [waiting]

    await approve(stack, fork_id, fork_call["call_id"])
    assert (await result(stack, fork_id))["outcome"] == "completed"
    report = await approve_and_finish(stack, lead)
    assert [(s["workflow_id"], s["outcome"]) for s in report["subagents"]] == [(child, "completed")]


async def test_a_squatter_left_at_a_tenants_ledger_is_named_and_other_tenants_go_on(
    stack: SystemStack,
) -> None:
    worker: WorkerProcess = await stack.start_worker()
    tenant, other = f"squatted-{new_key()}", f"fine-{new_key()}"
    # A turn started there before ids were refused: on a queue no worker polls, it never ends.
    await raw_start(stack, f"nobody-{new_key()}", ledger_id(tenant), answers(stack, new_key()))
    try:
        victim, victim_key = f"turn-{new_key()}", new_key()
        await raw_start(stack, worker.task_queue, victim, answers(stack, victim_key, tenant=tenant))
        error = await refused(stack, victim)
        assert error.type == "RuntimeIdTaken"
        assert (
            f"workflow {ledger_id(tenant)} is a AgentTurnWorkflow, not the TenantLedgerWorkflow "
            "the runtime keeps there; terminate it"
        ) in error.message
        assert stack.fake.requests_for(victim_key) == []

        untouched = f"turn-{new_key()}"
        await raw_start(
            stack, worker.task_queue, untouched, answers(stack, new_key(), tenant=other)
        )
        assert (await result(stack, untouched))["outcome"] == "completed"
    finally:
        squatter = stack.client.get_workflow_handle(ledger_id(tenant))
        await squatter.terminate("test over")
        assert (await squatter.describe()).status == WorkflowExecutionStatus.TERMINATED
