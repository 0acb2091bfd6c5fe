"""Questions MCP servers ask inside a task, on a real dev server and real workers: the suite's
Python SDK server (2026-07-28 tasks extension: `inputRequests` in `tasks/get`, answered with
`tasks/update`) and the reference TypeScript `server-everything` (2025-11-25: the question comes
on `tasks/result`). The question is listed as a pending call of kind `elicitation`, answered
through `decide`, and the answer reaches the task, which finishes as one tool call; a worker
restart while the 2026-07-28 question waits loses nothing."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHandle
from turnkeeper.contracts.names import UPDATE_DECIDE, WORKFLOW_TYPE
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
from tests.support.interop import npm_bin
from tests.support.mcp_http_process import HttpServerProcess, task_stats
from tests.workflows.test_mcp_tasks import activity_types, task_server, the_result
from turnkeeper.client.client import TurnHandle
from turnkeeper.worker.settings import Settings

__all__ = ["task_server"]  # the fixture, shared with test_mcp_tasks

CLARIFY = "mcp__lab__clarify"
RESEARCH = "mcp__everything__simulate-research-query"


@pytest.fixture
def lab(tmp_path: Path, task_server: HttpServerProcess) -> Settings:
    """Worker settings with the suite's 2026-07-28 task server and server-everything."""
    config = tmp_path / "mcp.json"
    everything = [str(npm_bin("mcp-server-everything")), "stdio"]
    servers = {
        "lab": {"url": task_server.url, "timeout_s": 8},
        "everything": {"command": everything, "timeout_s": 60},
    }
    config.write_text(json.dumps({"servers": servers}))
    return dataclasses.replace(make_settings(tmp_path, f"tq-{uuid.uuid4()}"), mcp_config=config)


async def _asking(
    client: Client,
    fake_anthropic: FakeAnthropic,
    lab: Settings,
    call: tuple[str, dict[str, object]],
) -> tuple[WorkflowHandle, PendingCall]:
    """A turn that makes `call`, once its task's question waits (a worker must run)."""
    key = new_key()
    fake_anthropic.script(key, [fake.tool_calls(call), fake.text("done")])
    request = scripted_request(key, agent={"tools": [call[0]]})
    workflow = await client.start_workflow(
        WORKFLOW_TYPE, request, id=f"turn-{uuid.uuid4()}", task_queue=lab.task_queue
    )
    return workflow, (await wait_for_pending(workflow)).pending[0]


async def test_a_2026_task_question_is_answered_through_decide_and_the_task_finishes(
    client: Client, fake_anthropic: FakeAnthropic, lab: Settings, task_server: HttpServerProcess
) -> None:
    async with running_worker(client, lab, fake_anthropic):
        workflow, pending = await _asking(
            client, fake_anthropic, lab, (CLARIFY, {"topic": "tides"})
        )
        assert (pending.kind, pending.message) == ("elicitation", "Which tides do you mean?")
        assert pending.requested_schema is not None
        assert pending.requested_schema["required"] == ["meaning"]
        await TurnHandle(client, workflow).approve(pending.call_id, input={"meaning": "ocean"})
        report = AgentReport.model_validate(await workflow.result())

    assert the_result(report).text() == "report on tides as ocean"
    assert report.tool_calls == 1
    kinds = await activity_types(workflow)
    assert kinds.count("mcp_start_task") == 1 and kinds.count("mcp_answer_task") == 1
    stats = await task_stats(task_server.url)
    assert stats["created"] == 1 and stats["updates"] == 1 and stats["cancelled"] == []


async def test_a_declined_2026_task_question_reaches_the_task_as_declined(
    client: Client, fake_anthropic: FakeAnthropic, lab: Settings
) -> None:
    async with running_worker(client, lab, fake_anthropic):
        workflow, pending = await _asking(client, fake_anthropic, lab, (CLARIFY, {"topic": "x"}))
        await TurnHandle(client, workflow).reject(pending.call_id, reason="not telling")
        report = AgentReport.model_validate(await workflow.result())

    assert the_result(report).text() == "no report: the person chose decline"


async def test_a_2026_task_question_survives_a_worker_restart(
    client: Client, fake_anthropic: FakeAnthropic, lab: Settings, task_server: HttpServerProcess
) -> None:
    async with running_worker(client, lab, fake_anthropic):
        workflow, pending = await _asking(client, fake_anthropic, lab, (CLARIFY, {"topic": "tea"}))
    # The worker is gone; the question and the task's id are in the turn's history. The person
    # takes longer than the tool's timeout (8 s), which does not count their time.
    await asyncio.sleep(9)

    async with running_worker(client, lab, fake_anthropic):
        await TurnHandle(client, workflow).approve(pending.call_id, input={"meaning": "green"})
        report = AgentReport.model_validate(await workflow.result())

    assert the_result(report).text() == "report on tea as green"
    assert report.tool_calls == 1
    stats = await task_stats(task_server.url)
    assert stats["created"] == 1 and stats["updates"] == 1


@pytest.mark.parametrize(
    ("answer", "heard"),
    [
        ({"approved": True, "input": {"interpretation": "snake"}}, "**Clarification**: snake"),
        ({"approved": False, "reason": "not now"}, "User declined - using default"),
        ({"approved": False, "reason": "cancel"}, "User cancelled - using default"),
    ],
)
async def test_a_2025_task_of_server_everything_asks_through_tasks_result(
    client: Client,
    fake_anthropic: FakeAnthropic,
    lab: Settings,
    answer: dict[str, object],
    heard: str,
) -> None:
    query = (RESEARCH, {"topic": "python", "ambiguous": True})
    async with running_worker(client, lab, fake_anthropic):
        workflow, pending = await _asking(client, fake_anthropic, lab, query)
        assert pending.kind == "elicitation"
        assert pending.message is not None and "python" in pending.message
        await workflow.execute_update(UPDATE_DECIDE, {"call_id": pending.call_id, **answer})
        report = AgentReport.model_validate(await workflow.result())

    result = the_result(report)
    assert not result.is_error, result.text()
    assert "# Research Report: python" in result.text()
    assert heard in result.text()
    assert report.tool_calls == 1
    assert "mcp_task_input" in await activity_types(workflow)
