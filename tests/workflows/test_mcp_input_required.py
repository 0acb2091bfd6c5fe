"""An MCP server that asks for input in 2026-07-28: the `MCPServer` of the official Python SDK
answers `tools/call` with an `InputRequiredResult`; the question waits in the turn's workflow
state (no connection, no activity held), so a worker restart while the person thinks loses
nothing, and the answer goes back with the server's `requestState` on a fresh call."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHandle
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import WORKFLOW_TYPE
from turnkeeper.contracts.signals import PendingCall
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import (
    make_settings,
    new_key,
    running_worker,
    scripted_request,
    wait_for_pending,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.mcp_http_process import ASKING_SERVER, HttpServerProcess
from turnkeeper.client.client import DecisionRefused, TurnHandle
from turnkeeper.worker.settings import Settings

TOOL = "mcp__shop__order"
QUESTION = "Where should the order go?"  # as the asking server words it


@pytest.fixture
async def shop(tmp_path: Path) -> AsyncIterator[Settings]:
    """Worker settings whose MCP server `shop` is the asking server over streamable HTTP."""
    server = HttpServerProcess(script=ASKING_SERVER)
    await server.start()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"servers": {"shop": {"url": server.url}}}))
    try:
        yield dataclasses.replace(make_settings(tmp_path, f"tq-{uuid.uuid4()}"), mcp_config=config)
    finally:
        await server.kill()


async def _ordering_tea(
    client: Client, fake_anthropic: FakeAnthropic, shop: Settings
) -> tuple[WorkflowHandle, PendingCall]:
    """A turn that orders tea, once the server's question waits (a worker must run)."""
    key = new_key()
    fake_anthropic.script(key, [fake.tool_calls((TOOL, {"item": "tea"})), fake.text("done")])
    request = scripted_request(key, agent={"tools": [TOOL]})
    workflow = await client.start_workflow(
        WORKFLOW_TYPE, request, id=f"turn-{uuid.uuid4()}", task_queue=shop.task_queue
    )
    return workflow, (await wait_for_pending(workflow)).pending[0]


def _result(report: AgentReport) -> ToolResultBlock:
    return next(b for b in report.messages[2].content if isinstance(b, ToolResultBlock))


async def test_the_answer_given_after_a_worker_restart_reaches_the_server(
    client: Client, fake_anthropic: FakeAnthropic, shop: Settings
) -> None:
    async with running_worker(client, shop, fake_anthropic):
        workflow, pending = await _ordering_tea(client, fake_anthropic, shop)
    # The worker is gone; the question is workflow state.
    assert (pending.kind, pending.message) == ("elicitation", QUESTION)
    assert pending.requested_schema is not None
    assert set(pending.requested_schema["properties"]) == {"address", "express"}

    async with running_worker(client, shop, fake_anthropic):
        turn = TurnHandle(client, workflow)
        with pytest.raises(DecisionRefused, match="'express'"):
            await turn.approve(pending.call_id, input={"address": "1 Main St", "express": "yes"})
        await turn.approve(pending.call_id, input={"address": "1 Main St", "express": True})
        report = AgentReport.model_validate(await workflow.result())

    assert _result(report).text() == "tea ships to 1 Main St by express"
    assert report.tool_calls == 1


async def test_a_declined_question_reaches_the_server_as_declined(
    client: Client, fake_anthropic: FakeAnthropic, shop: Settings
) -> None:
    async with running_worker(client, shop, fake_anthropic):
        workflow, pending = await _ordering_tea(client, fake_anthropic, shop)
        await TurnHandle(client, workflow).reject(pending.call_id, reason="no address")
        report = AgentReport.model_validate(await workflow.result())

    assert _result(report).text() == "order of tea not placed: the person chose decline"
