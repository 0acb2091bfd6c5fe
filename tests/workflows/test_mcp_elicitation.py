"""An MCP server that asks for input during a call, handshake era: the reference server
(`@modelcontextprotocol/server-everything`, npm, a real stdio subprocess) sends
`elicitation/create` from its `trigger-elicitation-request` tool; the turn lists the question as
a pending call of kind `elicitation` and `decide` answers it (accept, decline, cancel)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.client import Client, WorkflowHandle
from turnkeeper.contracts.decision_signing import public_key_line
from turnkeeper.contracts.mcp_elicitation import ELICITATION_CANCEL
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import QUERY_STATUS
from turnkeeper.contracts.signals import PendingCall, TurnStatus
from turnkeeper.contracts.turn import AgentReport

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
from tests.support.interop import npm_bin
from turnkeeper.client.client import DecisionRefused, TurnHandle

TOOL = "mcp__every__trigger-elicitation-request"
QUESTION = "Please provide inputs for the following fields:"


@contextlib.asynccontextmanager
async def _everything_worker(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path, task_queue: str | None = None
) -> AsyncIterator[TurnRunner]:
    """A worker whose MCP server `every` is server-everything over stdio."""
    config = tmp_path / "mcp.json"
    command = [str(npm_bin("mcp-server-everything")), "stdio"]
    config.write_text(json.dumps({"servers": {"every": {"command": command}}}))
    queue = task_queue or f"tq-{uuid.uuid4()}"
    settings = dataclasses.replace(make_settings(tmp_path, queue), mcp_config=config)
    async with running_worker(client, settings, fake_anthropic):
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic)


@pytest.fixture
async def everything(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> AsyncIterator[TurnRunner]:
    async with _everything_worker(client, fake_anthropic, tmp_path) as runner:
        yield runner


async def _asking_turn(runner: TurnRunner, **agent: Any) -> tuple[WorkflowHandle, PendingCall]:
    """A turn whose only call is the server's question, once the question waits."""
    key = new_key()
    runner.fake.script(key, [fake.tool_calls((TOOL, {})), fake.text("done")])
    request = scripted_request(key, agent={"tools": [TOOL], **agent})
    handle = await runner.start(request)
    status = await wait_for_pending(handle)
    return handle, status.pending[0]


def _result(report: AgentReport) -> ToolResultBlock:
    return next(b for b in report.messages[2].content if isinstance(b, ToolResultBlock))


async def test_the_question_is_listed_and_an_accepted_answer_reaches_the_server(
    everything: TurnRunner,
) -> None:
    handle, pending = await _asking_turn(everything)
    assert pending.kind == "elicitation" and pending.tool == TOOL
    assert pending.message == QUESTION
    assert pending.requested_schema is not None
    assert pending.requested_schema["required"] == ["name"]
    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert status.state == "awaiting_approval"

    turn = TurnHandle(everything.client, handle)
    decided = await turn.approve(pending.call_id, input={"name": "Ada Lovelace", "check": True})

    assert [(d.call_id, d.approved) for d in decided] == [(pending.call_id, True)]
    report = await handle.result()
    text = _result(report).text()
    assert "User provided the requested information" in text
    assert "Name: Ada Lovelace" in text and "Agreed to terms: true" in text
    assert report.tool_calls == 1  # the question does not make it a second call
    assert (await handle.query(QUERY_STATUS, result_type=TurnStatus)).pending == []


@pytest.mark.parametrize(
    ("reason", "told"),
    [("not today", "User declined"), (ELICITATION_CANCEL, "User cancelled")],
)
async def test_a_rejection_declines_and_the_cancel_reason_cancels(
    everything: TurnRunner, reason: str, told: str
) -> None:
    handle, pending = await _asking_turn(everything)

    await TurnHandle(everything.client, handle).reject(pending.call_id, reason=reason)

    assert told in _result(await handle.result()).text()


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"name": 7}, "7 is not of type 'string'"),
        ({"check": True}, "missing required argument 'name'"),
        ({"name": "Ada", "integer": "many"}, "'many' is not of type 'integer'"),
    ],
)
async def test_an_answer_that_does_not_fit_the_schema_is_refused_and_the_call_waits(
    everything: TurnRunner, answer: dict[str, Any], problem: str
) -> None:
    handle, pending = await _asking_turn(everything)
    turn = TurnHandle(everything.client, handle)

    with pytest.raises(DecisionRefused, match="requested schema") as refused:
        await turn.approve(pending.call_id, input=answer)

    assert problem in str(refused.value)
    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert [(p.call_id, p.kind) for p in status.pending] == [(pending.call_id, "elicitation")]
    await turn.approve(pending.call_id, input={"name": "Grace"})  # nothing was lost
    assert "Name: Grace" in _result(await handle.result()).text()


async def test_only_the_agents_approvers_may_answer(everything: TurnRunner) -> None:
    handle, pending = await _asking_turn(everything, approvers=["alice"])
    turn = TurnHandle(everything.client, handle)

    with pytest.raises(DecisionRefused, match="'mallory' may not decide"):
        await turn.approve(pending.call_id, approver="mallory", input={"name": "Mallory"})

    decided = await turn.approve(pending.call_id, approver="alice", input={"name": "Alice"})
    assert decided[0].approver == "alice"
    assert "Name: Alice" in _result(await handle.result()).text()


async def test_the_time_budget_stops_while_the_person_thinks(everything: TurnRunner) -> None:
    key = new_key()
    everything.fake.script(key, [fake.tool_calls((TOOL, {})), fake.text("done")])
    constraints = {"time_budget_ms": 4_000}
    request = scripted_request(key, agent={"tools": [TOOL]}, task={"constraints": constraints})
    handle = await everything.start(request)
    pending = (await wait_for_pending(handle)).pending[0]
    before = await handle.query(QUERY_STATUS, result_type=TurnStatus)

    await asyncio.sleep(5)  # longer than the whole budget
    during = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    await TurnHandle(everything.client, handle).approve(pending.call_id, input={"name": "Ada"})

    assert during.elapsed_ms == before.elapsed_ms
    report = await handle.result()
    assert report.outcome == "completed" and report.output == "done"


async def test_a_question_whose_worker_died_is_not_left_listed(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    # The session, and the server's question with it, die with the worker: the tool is not
    # idempotent, so the model is told the call was interrupted, and nothing stays pending.
    key = new_key()
    fake_anthropic.script(key, [fake.tool_calls((TOOL, {})), fake.text("done")])
    request = scripted_request(key, agent={"tools": [TOOL]})
    async with _everything_worker(client, fake_anthropic, tmp_path) as runner:
        handle = await runner.start(request)
        await wait_for_pending(handle)
    async with _everything_worker(client, fake_anthropic, tmp_path, runner.task_queue):
        report = AgentReport.model_validate(await handle.result())
        status = await handle.query(QUERY_STATUS, result_type=TurnStatus)

    assert _result(report).is_error and "did not complete" in _result(report).text()
    assert status.pending == []


async def test_a_keyed_agents_answer_must_be_signed(everything: TurnRunner) -> None:
    alice = Ed25519PrivateKey.generate()
    approvers = [{"name": "alice", "public_key": public_key_line(alice)}]
    handle, pending = await _asking_turn(everything, approvers=approvers)
    turn = TurnHandle(everything.client, handle)

    with pytest.raises(DecisionRefused, match="the decision is not signed"):
        await turn.approve(pending.call_id, approver="alice", input={"name": "Forged"})

    decided = await turn.approve(pending.call_id, approver="alice", key=alice, input={"name": "Al"})
    assert decided[0].signed
    assert "Name: Al" in _result(await handle.result()).text()


async def test_a_sub_agents_question_is_listed_and_answered_at_the_root(
    everything: TurnRunner,
) -> None:
    key, child = new_key(), new_key()
    everything.fake.script(
        key, [fake.tool_calls(("helper", {"task": "ask the person"})), fake.text("done")]
    )
    everything.fake.script(child, [fake.tool_calls((TOOL, {})), fake.text("asked")])
    helper = {
        "name": "helper",
        "description": "Asks the person.",
        "agent": {
            "id": "helper-agent",
            "model": "anthropic:claude-sonnet-4-6",
            "system_prompt": f"You help. {fake.script_marker(child)}",
            "tools": [TOOL],
        },
    }
    handle = await everything.start(scripted_request(key, agent={"subagents": [helper]}))
    [pending] = (await wait_for_pending(handle)).pending
    assert (pending.kind, pending.message) == ("elicitation", QUESTION)
    assert pending.workflow_id is not None and pending.workflow_id != handle.id

    await TurnHandle(everything.client, handle).approve(pending.call_id, input={"name": "Root"})

    report = await handle.result()
    assert [ran.outcome for ran in report.subagents] == ["completed"]
    told = everything.fake.requests_for(child)[1].body["messages"][-1]  # the child's model
    assert "Name: Root" in json.dumps(told)
