"""MCP tool calls that servers answer with tasks, followed by whole turns on a real dev server
and a real worker: the reference TypeScript `server-everything` (2025-11-25 tasks, over stdio)
and a Python SDK server of the suite's (the 2026-07-28 tasks extension, over HTTP). The task is
polled between workflow timers to its result, counted as one tool call, cancelled on the server
when the turn stops or the tool's timeout passes; a failed task and a malformed task answer
reach the model as `is_error` results."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import CancelledError
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import TurnRunner, make_settings, new_key, running_worker, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.interop import npm_bin
from tests.support.mcp_http_process import TASK_SERVER, HttpServerProcess, task_stats
from tests.support.waiting import until
from turnkeeper.client.client import turn


@pytest.fixture
async def task_server() -> AsyncIterator[HttpServerProcess]:
    server = HttpServerProcess(script=TASK_SERVER)
    await server.start()
    try:
        yield server
    finally:
        await server.kill()


@pytest.fixture
async def task_turns(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path, task_server: HttpServerProcess
) -> AsyncIterator[TurnRunner]:
    config = tmp_path / "mcp.json"
    everything = [str(npm_bin("mcp-server-everything")), "stdio"]
    config.write_text(
        json.dumps(
            {
                "servers": {
                    "lab": {"url": task_server.url, "timeout_s": 8},
                    "everything": {"command": everything, "timeout_s": 60},
                }
            }
        )
    )
    settings = dataclasses.replace(make_settings(tmp_path, f"tq-{uuid.uuid4()}"), mcp_config=config)
    async with running_worker(client, settings, fake_anthropic):
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic)


def the_result(report: AgentReport) -> ToolResultBlock:
    [block] = [b for b in report.messages[2].content if isinstance(b, ToolResultBlock)]
    return block


async def activity_types(handle: WorkflowHandle[Any, Any]) -> list[str]:
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


async def test_a_2026_task_is_polled_to_its_result_as_one_tool_call(
    task_turns: TurnRunner, task_server: HttpServerProcess
) -> None:
    key = new_key()
    research = ("mcp__lab__research", {"topic": "tides", "seconds": 2})
    task_turns.fake.script(key, [fake.tool_calls(research), fake.text("done")])

    handle = await task_turns.start(scripted_request(key, agent={"tools": ["mcp__lab__*"]}))
    report = await handle.result()

    result = the_result(report)
    assert result.text() == "report on tides" and not result.is_error
    assert report.tool_calls == 1
    stats = await task_stats(task_server.url)
    assert stats["created"] == 1 and stats["cancelled"] == []
    kinds = await activity_types(handle)
    assert kinds.count("mcp_start_task") == 1 and "mcp_call_tool" not in kinds
    assert kinds.count("mcp_poll_task") >= 2  # the task ran 2 s; polls are at least 0.5 s apart
    statuses = [
        (event.mcp_task_status, event.mcp_task_id)
        async for event in turn(task_turns.client, handle.id).events()
        if event.kind == "mcp_task_status"
    ]
    assert [status for status, _ in statuses] == ["working", "completed"]
    assert len({task_id for _, task_id in statuses}) == 1


async def test_a_2025_task_of_server_everything_is_followed_to_its_report(
    task_turns: TurnRunner,
) -> None:
    key = new_key()
    query = ("mcp__everything__simulate-research-query", {"topic": "durable agents"})
    task_turns.fake.script(key, [fake.tool_calls(query), fake.text("done")])
    tools = ["mcp__everything__simulate-research-query", "mcp__everything__echo"]

    handle = await task_turns.start(scripted_request(key, agent={"tools": tools}))
    report = await handle.result()

    result = the_result(report)
    assert not result.is_error, result.text()
    assert "# Research Report: durable agents" in result.text()
    assert report.tool_calls == 1
    kinds = await activity_types(handle)
    assert kinds.count("mcp_start_task") == 1 and kinds.count("mcp_poll_task") >= 3


async def test_a_failed_task_is_an_error_result_the_model_reads(
    task_turns: TurnRunner,
) -> None:
    key = new_key()
    task_turns.fake.script(key, [fake.tool_calls(("mcp__lab__doomed", {})), fake.text("ok")])

    report = await task_turns.run(scripted_request(key, agent={"tools": ["mcp__lab__*"]}))

    result = the_result(report)
    assert result.is_error and "failed: the research database is gone" in result.text()
    assert report.outcome == "completed" and report.tool_calls == 1


async def test_a_task_answer_without_an_id_is_an_error_result_and_nothing_waits(
    task_turns: TurnRunner,
) -> None:
    key = new_key()
    task_turns.fake.script(key, [fake.tool_calls(("mcp__lab__garbled", {})), fake.text("ok")])

    handle = await task_turns.start(scripted_request(key, agent={"tools": ["mcp__lab__*"]}))
    report = await handle.result()

    result = the_result(report)
    assert result.is_error
    assert "answered the call of 'garbled' wrongly: the task has no 'taskId'" in result.text()
    assert "mcp_poll_task" not in await activity_types(handle)


async def test_a_task_past_the_tools_timeout_is_cancelled_on_the_server(
    task_turns: TurnRunner, task_server: HttpServerProcess
) -> None:
    key = new_key()
    research = ("mcp__lab__research", {"topic": "slow", "seconds": 60})
    task_turns.fake.script(key, [fake.tool_calls(research), fake.text("ok")])

    report = await task_turns.run(scripted_request(key, agent={"tools": ["mcp__lab__*"]}))

    result = the_result(report)
    assert result.is_error and "did not finish within 8 s" in result.text()
    stats = await task_stats(task_server.url)
    assert stats["created"] == 1 and len(stats["cancelled"]) == 1


@pytest.mark.parametrize("stop", ["interrupt", "cancel"])
async def test_stopping_the_turn_cancels_its_task_on_the_server(
    task_turns: TurnRunner, task_server: HttpServerProcess, stop: str
) -> None:
    key = new_key()
    research = ("mcp__lab__research", {"topic": "endless", "seconds": 60})
    task_turns.fake.script(key, [fake.tool_calls(research), fake.text("ok")])
    handle = await task_turns.start(scripted_request(key, agent={"tools": ["mcp__lab__*"]}))
    await until(lambda: activity_types(handle), lambda kinds: "mcp_poll_task" in kinds, "a poll")

    if stop == "interrupt":
        await turn(task_turns.client, handle.id).interrupt("enough", author="carol")
        report = await handle.result()
        assert report.outcome == "interrupted"
    else:
        await handle.cancel()
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
        assert isinstance(failure.value.cause, CancelledError)

    stats = await task_stats(task_server.url)
    assert stats["created"] == 1 and len(stats["cancelled"]) == 1
    assert "mcp_cancel_task" in await activity_types(handle)


async def test_a_plain_mcp_tool_keeps_the_plain_call(task_turns: TurnRunner) -> None:
    key = new_key()
    echo = ("mcp__everything__echo", {"message": "hi"})
    task_turns.fake.script(key, [fake.tool_calls(echo), fake.text("ok")])

    handle = await task_turns.start(
        scripted_request(key, agent={"tools": ["mcp__everything__echo"]})
    )
    report = await handle.result()

    assert "hi" in the_result(report).text()
    kinds = await activity_types(handle)
    assert "mcp_call_tool" in kinds and "mcp_start_task" not in kinds


async def test_stats_of_a_fresh_task_server_are_empty(task_server: HttpServerProcess) -> None:
    # The server-side counts the tests above rely on start at zero in each server process.
    stats = await task_stats(task_server.url)
    assert stats == {"created": 0, "cancelled": [], "polls": 0, "by_tool": {}, "updates": 0}
