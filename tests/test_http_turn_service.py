"""`TurnService` (turnkeeper/http/turns.py) on the dev server: the owner and request the access
rules read are the current run's, a workflow that is not a turn is no turn, and the listing reads
`StartedBy` from visibility. No worker is needed: describe, history and visibility answer for a
turn that never ran a task."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.common import RawValue
from turnkeeper.contracts.signals import ApproveInput

from tests.support.waiting import until
from turnkeeper.client.client import start_turn
from turnkeeper.http.turns import ApiError, TurnService


def nobody_queue() -> str:
    """A task queue no worker polls: the turn exists and waits."""
    return f"nobody-{uuid.uuid4().hex[:8]}"


async def test_a_reused_id_has_the_owner_and_request_of_its_current_run(client: Client) -> None:
    service = TurnService(client)
    workflow_id = f"reused-{uuid.uuid4().hex[:8]}"
    task = {"id": "t", "input": "hi"}
    await start_turn(
        client,
        agent={"id": "first-agent", "model": "demo:x", "approvers": ["mia"]},
        task=task,
        id=workflow_id,
        task_queue=nobody_queue(),
        started_by="mia",
    )
    seen = await service.started(workflow_id)
    assert (seen.started_by, seen.request.agent.approver_names()) == ("mia", ["mia"])
    await client.get_workflow_handle(workflow_id).terminate("done")

    # The same id, a new run by someone else: nothing of the first run's rights carries over.
    await start_turn(
        client,
        agent={"id": "second-agent", "model": "demo:x"},
        task=task,
        id=workflow_id,
        task_queue=nobody_queue(),
        started_by="max",
    )
    again = await service.started(workflow_id)
    assert (again.started_by, again.request.agent.id) == ("max", "second-agent")
    assert again.request.agent.approver_names() is None
    await client.get_workflow_handle(workflow_id).terminate("done")


async def test_a_workflow_that_is_not_a_turn_is_no_turn(client: Client) -> None:
    workflow_id = f"approval-cache-{uuid.uuid4().hex[:8]}"
    await client.start_workflow("ApprovalCacheWorkflow", id=workflow_id, task_queue=nobody_queue())
    with pytest.raises(ApiError) as refused:
        await TurnService(client).started(workflow_id)
    assert (refused.value.status, refused.value.message) == (404, f"no turn {workflow_id!r}")
    await client.get_workflow_handle(workflow_id).terminate("done")
    with pytest.raises(ApiError) as missing:
        await TurnService(client).started(f"missing-{uuid.uuid4().hex}")
    assert missing.value.status == 404


# What a raw start can hand a turn (the fuzz tests start all of these in the shared namespace):
# a request that does not validate, JSON null (the `binary/null` encoding, which decodes to
# None without complaint), a bare string, no input at all, and two inputs.
UNREADABLE_STARTS = {
    "invalid": [{"agent": {"id": "a"}}],
    "null": [None],
    "string": ["hello"],
    "nothing": [],
    "two": [{"agent": {"id": "a"}}, {"task": {}}],
}


@pytest.mark.parametrize("shape", UNREADABLE_STARTS)
async def test_a_turn_whose_request_is_unreadable_is_no_turn(client: Client, shape: str) -> None:
    """Started past every client with something that is no `TurnRequest` (it fails at once):
    the API serves it to nobody, and the listings that read every turn's request skip it."""
    workflow_id = f"raw-{shape}-{uuid.uuid4().hex[:8]}"
    handle = await client.start_workflow(
        "AgentTurnWorkflow",
        args=UNREADABLE_STARTS[shape],
        id=workflow_id,
        task_queue=nobody_queue(),
    )
    service = TurnService(client)
    with pytest.raises(ApiError) as refused:
        await service.started(workflow_id)
    assert (refused.value.status, refused.value.message) == (404, f"no turn {workflow_id!r}")
    assert handle.first_execution_run_id is not None
    with pytest.raises(ApiError):
        await service.run_request(workflow_id, handle.first_execution_run_id)
    await handle.terminate("done")


async def test_a_turn_this_server_cannot_decrypt_is_no_turn(client: Client) -> None:
    """Encrypted with a key the server lacks (another deployment's worker, or keys not given to
    `turnkeeper serve`): served to nobody, and the listings go on."""
    workflow_id = f"sealed-{uuid.uuid4().hex[:8]}"
    sealed = Payload(
        metadata={"encoding": b"binary/encrypted", "encryption-key-id": b"elsewhere"},
        data=b"not for this server",
    )
    await client.start_workflow(
        "AgentTurnWorkflow", RawValue(sealed), id=workflow_id, task_queue=nobody_queue()
    )
    with pytest.raises(ApiError) as refused:
        await TurnService(client).started(workflow_id)
    assert refused.value.status == 404
    await client.get_workflow_handle(workflow_id).terminate("done")


async def test_the_listing_reads_the_owner_from_visibility(client: Client) -> None:
    owner = f"owner-{uuid.uuid4().hex[:8]}"
    handle = await start_turn(
        client,
        agent={"id": "listed-agent", "model": "demo:x"},
        task={"id": "t", "input": "hi"},
        task_queue=nobody_queue(),
        started_by=owner,
    )
    service = TurnService(client)
    [listed] = await until(
        lambda: service.list_turns(None, owner, 10), bool, "the turn in visibility"
    )
    assert (listed.workflow_id, listed.started_by, listed.agent_id) == (
        handle.id,
        owner,
        "listed-agent",
    )
    assert await service.list_turns("completed", owner, 10) == []
    await client.get_workflow_handle(handle.id).terminate("done")


async def test_a_decision_pinned_to_a_turn_never_reaches_a_later_turn_at_its_id(
    client: Client,
) -> None:
    service = TurnService(client)
    workflow_id = f"pinned-{uuid.uuid4().hex[:8]}"
    agent = {"id": "pinned-agent", "model": "demo:x"}
    task = {"id": "t", "input": "hi"}
    first = await start_turn(
        client, agent=agent, task=task, id=workflow_id, task_queue=nobody_queue()
    )
    chain = (await service.started(workflow_id)).chain
    assert chain == first.workflow.result_run_id
    await client.get_workflow_handle(workflow_id).terminate("done")
    second = await start_turn(
        client, agent=agent, task=task, id=workflow_id, task_queue=nobody_queue()
    )
    assert (await service.started(workflow_id)).chain == second.workflow.result_run_id != chain

    # Refused by Temporal at once: no worker polls the queue, so an update that reached the
    # second turn would wait instead.
    decision = ApproveInput(call_id="call-1", approved=True, approver="mia")
    with pytest.raises(ApiError) as refused:
        await asyncio.wait_for(service.decide(workflow_id, decision, None, chain), 20)
    assert (refused.value.status, refused.value.message) == (404, f"no turn {workflow_id!r}")
    await client.get_workflow_handle(workflow_id).terminate("done")
