"""An MCP task outlives the worker that started it: `python worker.py` is killed with -9 while
the turn follows a task of an HTTP MCP server (the 2026-07-28 tasks extension), and a new worker
on the same queue polls the same task (its id is in the turn's history) to its result. The
server created the task once: the new worker did not call the tool again."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.support.mcp_http_process import TASK_SERVER, HttpServerProcess, task_stats
from tests.support.waiting import until
from tests.system.conftest import SystemStack
from tests.system.steps import model_saw, result, start, tool_results, turn_request


async def test_a_task_is_polled_to_its_result_across_a_killed_worker(
    stack: SystemStack, tmp_path: Path
) -> None:
    server = HttpServerProcess(script=TASK_SERVER)
    await server.start()
    try:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"servers": {"lab": {"url": server.url, "timeout_s": 60}}}))
        first = await stack.start_worker(env={"TURNKEEPER_MCP_CONFIG": str(config)})
        key = new_key()
        research = ("mcp__lab__research", {"topic": "tides", "seconds": 6})
        stack.fake.script(key, [fake.tool_calls(research), fake.text("The report is in.")])
        request = turn_request(key)
        request["agent"]["tools"] = ["mcp__lab__research"]
        workflow_id = await start(stack, first, request)
        await until(lambda: _scheduled(stack, workflow_id), _polled, "the first poll of the task")

        assert first.stop(signal.SIGKILL) == -signal.SIGKILL
        env = {name: first.environment[name] for name in ("AGENT_WORKSPACE", "TURNKEEPER_DATA_DIR")}
        env["TURNKEEPER_MCP_CONFIG"] = str(config)
        second = await stack.start_worker(task_queue=first.task_queue, env=env)
        report = await result(stack, workflow_id)

        assert (report["outcome"], report["tool_calls"]) == ("completed", 1)
        [answered] = tool_results(model_saw(stack, key)[-1])
        assert "report on tides" in json.dumps(answered["content"])
        assert not answered.get("is_error")
        stats = await task_stats(server.url)
        assert stats["created"] == 1 and stats["cancelled"] == []
        started = first.events("mcp_task_started")
        settled = second.events("mcp_task_settled")
        assert len(started) == 1 and len(settled) == 1
        assert started[0]["task_id"] == settled[0]["task_id"]
        assert not second.events("mcp_task_started")
    finally:
        await server.kill()


async def _scheduled(stack: SystemStack, workflow_id: str) -> list[str]:
    handle = stack.client.get_workflow_handle(workflow_id)
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


def _polled(kinds: list[Any]) -> bool:
    return "mcp_poll_task" in kinds
