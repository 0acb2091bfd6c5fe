"""Steering and interrupting running turns on a real server: a steer reaches the model before its
next call (also one sent while a call is in flight), an interrupt stops a turn that waits for an
approval or runs a tool with outcome `interrupted` and the report so far, a finished turn takes
neither, and a keyed agent takes only signed ones."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.client import Client, WorkflowUpdateFailedError
from turnkeeper.activities.tools.registry import ToolRegistry, worker_tool
from turnkeeper.contracts.decision_signing import public_key_line
from turnkeeper.contracts.messages import TextBlock, ToolResultBlock
from turnkeeper.contracts.names import UPDATE_STEER
from turnkeeper.contracts.steering import SteerInput

from tests.conftest import (
    TurnRunner,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
    wait_for_pending,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.anthropic_replies import slow
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.waiting import until
from turnkeeper.client.client import TurnHandle, turn
from turnkeeper.client.errors import DecisionRefused

WRITE = ("write_file", {"path": "out.md", "content": "hello"})


@worker_tool(name="linger")
async def linger() -> str:
    """Takes a while."""
    await asyncio.sleep(2)
    return "lingered"


@pytest.fixture
async def lingering(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> AsyncIterator[TurnRunner]:
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    async with running_worker(client, settings, fake_anthropic, tools=ToolRegistry([linger])):
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic)


async def started(turns: TurnRunner, key: str, **agent: Any) -> TurnHandle:
    tools = agent.pop("tools", ["write_file"])
    handle = await turns.start(scripted_request(key, agent={"tools": tools, **agent}))
    return turn(turns.client, handle.id)


def last_user_texts(body: dict[str, Any]) -> list[str]:
    last = body["messages"][-1]
    assert last["role"] == "user"
    return [block["text"] for block in last["content"] if block.get("type") == "text"]


async def test_a_steer_during_an_approval_wait_joins_the_tool_results(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE), fake.text("Done.")])
    handle = await started(turns, key)
    await wait_for_pending(handle.workflow)

    accepted = await handle.steer("Write it in French.", author="alice")
    await handle.approve(approver="alice")
    report = await handle.result()

    assert (accepted.accepted, accepted.iteration) == (True, 2)
    assert report.outcome == "completed" and report.output == "Done."
    second = turns.fake.requests_for(key)[1].body
    assert last_user_texts(second) == ["Write it in French."]
    [steer] = report.interventions
    assert (steer.kind, steer.author, steer.text, steer.iteration) == (
        "steer",
        "alice",
        "Write it in French.",
        2,
    )
    kinds = [event.kind async for event in handle.events()]
    assert kinds.index("steered") < kinds.index("model_call_finished", kinds.index("steered"))
    with pytest.raises(DecisionRefused, match="has ended"):
        await handle.steer("Too late.", author="alice")


async def test_a_steer_during_the_last_model_call_is_read_before_the_turn_ends(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(key, [slow(fake.text("First answer."), 1.5), fake.text("Second answer.")])
    handle = await started(turns, key, tools=[])
    await turns.fake.wait_for_requests(key, 1)

    accepted = await handle.steer("Shorter, please.", author="bob")
    report = await handle.result()

    assert accepted.iteration == 2
    assert report.output == "Second answer." and report.llm_calls == 2
    second = turns.fake.requests_for(key)[1].body
    assert second["messages"][-2]["role"] == "assistant"
    assert last_user_texts(second) == ["Shorter, please."]


async def test_an_interrupt_while_awaiting_approval_ends_the_turn_interrupted(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE), fake.text("never")])
    handle = await started(turns, key)
    await wait_for_pending(handle.workflow)

    await handle.interrupt("wrong file", author="carol")
    report = await handle.result()

    assert report.outcome == "interrupted" and report.llm_calls == 1
    [result] = report.messages[-1].content
    assert isinstance(result, ToolResultBlock) and result.is_error
    assert "interrupted" in result.text()
    assert not (turns.workspace / "out.md").exists()
    status = await handle.status()
    assert status.state == "interrupted" and status.pending == []
    [interrupt] = report.interventions
    assert (interrupt.kind, interrupt.author, interrupt.text) == (
        "interrupt",
        "carol",
        "wrong file",
    )
    with pytest.raises(DecisionRefused, match="has ended"):
        await handle.interrupt("again")
    assert len(turns.fake.requests_for(key)) == 1


async def test_an_interrupt_cancels_a_running_tool(lingering: TurnRunner) -> None:
    key = new_key()
    lingering.fake.script(key, [fake.tool_calls(("linger", {})), fake.text("never")])
    handle = await started(lingering, key, tools=["linger"])
    await lingering.fake.wait_for_requests(key, 1)
    await asyncio.sleep(0.5)  # the tool is running now

    await handle.interrupt("enough", author="dave")
    report = await asyncio.wait_for(handle.result(), timeout=1.5)  # before the tool could end

    assert report.outcome == "interrupted"
    [result] = report.messages[-1].content
    assert isinstance(result, ToolResultBlock) and "interrupted" in result.text()


async def test_a_keyed_agent_takes_only_signed_steers_once(turns: TurnRunner) -> None:
    key = new_key()
    alice = Ed25519PrivateKey.generate()
    approvers = [{"name": "alice", "public_key": public_key_line(alice)}]
    turns.fake.script(key, [fake.tool_calls(WRITE), fake.text("Done.")])
    handle = await started(turns, key, approvers=approvers)
    await wait_for_pending(handle.workflow)

    with pytest.raises(DecisionRefused, match="not signed"):
        await handle.steer("Unsigned.", author="alice")
    with pytest.raises(DecisionRefused, match="'mallory' may not steer"):
        await handle.steer("Not an approver.", author="mallory")
    expires = datetime.now(UTC) + timedelta(minutes=5)
    run = (await handle.status()).first_run_id
    signed = SteerInput(message="Signed.", author="alice").signed_with(
        alice, handle.id, "test-agent", expires, first_run_id=run
    )
    payload = signed.model_dump(mode="json", exclude_none=True)
    await handle.workflow.execute_update(UPDATE_STEER, payload)
    with pytest.raises(WorkflowUpdateFailedError) as copy:
        await handle.workflow.execute_update(UPDATE_STEER, payload)
    assert "applied already" in str(copy.value.cause)
    assert (await handle.steer("Also signed.", author="alice", key=alice)).iteration == 2

    await handle.approve(approver="alice", key=alice)
    report = await handle.result()

    second = turns.fake.requests_for(key)[1].body
    assert last_user_texts(second) == ["Signed.", "Also signed."]
    assert [(i.text, i.signed) for i in report.interventions] == [
        ("Signed.", True),
        ("Also signed.", True),
    ]
    assert isinstance(report.messages[2].content[-1], TextBlock)


async def test_an_interrupt_ends_a_wait_for_a_budget(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(("list_files", {"path": "."})), fake.text("never")])
    request = scripted_request(
        key,
        agent={"max_iterations": 1},
        task={"constraints": {"on_budget_exhausted": "pause"}},
    )
    handle = turn(turns.client, (await turns.start(request)).id)
    await until(handle.status, lambda s: s.budget_request is not None, "a budget request")

    await handle.interrupt("not worth more", author="erin")
    report = await handle.result()

    assert report.outcome == "interrupted" and report.tool_calls == 1
    status = await handle.status()
    assert (status.state, status.budget_request) == ("interrupted", None)
