"""The MCP task activities against real servers: discovery records each tool's task support
(the reference TypeScript `server-everything` in 2025-11-25, the suite's tasks server in
2026-07-28, the demo server without tasks), a task started and polled by hand to its result, and
the answers that cannot be followed (a task the server does not know, a cancel of an ended task)
coming back as results rather than failures."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.mcp.config import HttpServerConfig, McpConfig, StdioServerConfig
from turnkeeper.activities.mcp.mcp_activity import McpActivities
from turnkeeper.contracts.mcp import (
    McpCallInput,
    McpListToolsInput,
    McpTaskHandle,
    McpTaskInput,
    McpTaskPollResult,
)

from tests.support.interop import npm_bin
from tests.support.mcp_http_process import DEMO_SERVER, TASK_SERVER, HttpServerProcess
from turnkeeper.payloads.content_store import LocalFolderStore

# A task the server never created.
UNKNOWN = McpTaskHandle(
    server="lab", tool="mcp__lab__research", task_id="no-such-task", protocol="2026-07-28"
)


@pytest.fixture
async def task_server() -> AsyncIterator[HttpServerProcess]:
    server = HttpServerProcess(script=TASK_SERVER)
    await server.start()
    yield server
    await server.kill()


@pytest.fixture
async def activities(
    tmp_path: Path, task_server: HttpServerProcess
) -> AsyncIterator[McpActivities]:
    everything = [str(npm_bin("mcp-server-everything")), "stdio"]
    servers = [
        HttpServerConfig(name="lab", url=task_server.url, connect_timeout_s=5.0),
        StdioServerConfig(name="everything", command=everything, timeout_s=30.0),
        StdioServerConfig(name="demo", command=[sys.executable, str(DEMO_SERVER)]),
    ]
    config = McpConfig(servers={server.name: server for server in servers})
    made = McpActivities(config, LocalFolderStore(tmp_path / "store"))
    yield made
    await made.aclose()


async def run(activity: Any, argument: Any) -> Any:
    return await ActivityEnvironment().run(activity, argument)


async def test_discovery_records_which_tools_may_answer_with_a_task(
    activities: McpActivities,
) -> None:
    listing = await run(activities.mcp_list_tools, McpListToolsInput(turn_id="turn-1"))

    support = {spec.name: spec.task_support for spec in listing.tools}
    assert listing.errors == []
    assert support["mcp__everything__simulate-research-query"] == "required"  # 2025-11-25
    assert support["mcp__everything__echo"] == "forbidden"
    assert support["mcp__lab__research"] == "optional"  # a 2026-07-28 server decides per call
    assert support["mcp__demo__add"] == "forbidden"  # no tasks at all


async def test_a_task_started_by_hand_is_polled_to_its_stored_result(
    activities: McpActivities, tmp_path: Path
) -> None:
    call = McpCallInput(
        turn_id="turn-1",
        call_id="toolu_1",
        name="mcp__lab__research",
        input={"topic": "tides", "seconds": 0.3},
    )
    started = await run(activities.tasks.mcp_start_task, call)

    task = started.task
    assert started.result is None and task is not None
    assert (task.server, task.protocol, task.status) == ("lab", "2026-07-28", "working")
    polled = McpTaskPollResult(task=task)
    for _ in range(50):
        poll = McpTaskInput(turn_id="turn-1", call_id="toolu_1", task=task)
        polled = await run(activities.tasks.mcp_poll_task, poll)
        if polled.result is not None:
            break
        await asyncio.sleep(0.1)
    assert polled.result is not None and polled.task.status == "completed"
    assert (polled.result.content, polled.result.is_error) == ("report on tides", False)
    stored = LocalFolderStore(tmp_path / "store").get(polled.result.block_ref)
    assert b"report on tides" in await stored


async def test_a_task_the_server_does_not_know_is_an_error_result(
    activities: McpActivities,
) -> None:
    poll = McpTaskInput(turn_id="turn-1", call_id="toolu_1", task=UNKNOWN)

    polled = await run(activities.tasks.mcp_poll_task, poll)

    assert polled.result is not None and polled.result.is_error
    assert "no longer follows task 'no-such-task'" in polled.result.content


async def test_a_task_of_a_server_this_worker_lacks_is_an_error_result(
    activities: McpActivities,
) -> None:
    elsewhere = UNKNOWN.model_copy(update={"server": "elsewhere"})
    poll = McpTaskInput(turn_id="turn-1", call_id="toolu_1", task=elsewhere)

    polled = await run(activities.tasks.mcp_poll_task, poll)
    cancelled = await run(activities.tasks.mcp_cancel_task, poll)

    assert polled.result is not None and polled.result.is_error
    assert "not configured with it" in polled.result.content
    assert not cancelled.cancelled and "not configured with it" in cancelled.detail


async def test_a_poll_answer_with_an_unknown_status_is_an_error_result(
    activities: McpActivities,
) -> None:
    call = McpCallInput(turn_id="turn-1", call_id="toolu_1", name="mcp__lab__wobbly")
    started = await run(activities.tasks.mcp_start_task, call)
    assert started.task is not None

    poll = McpTaskInput(turn_id="turn-1", call_id="toolu_1", task=started.task)
    polled = await run(activities.tasks.mcp_poll_task, poll)

    assert polled.result is not None and polled.result.is_error
    assert "answered a poll of task" in polled.result.content
    assert "unknown status 'sleeping'" in polled.result.content


async def test_cancelling_an_unknown_task_answers_that_it_was_not_cancelled(
    activities: McpActivities,
) -> None:
    cancel = McpTaskInput(turn_id="turn-1", call_id="toolu_1", task=UNKNOWN)

    answer = await run(activities.tasks.mcp_cancel_task, cancel)

    assert not answer.cancelled and "no-such-task" in answer.detail


async def test_a_tool_of_a_server_without_tasks_is_called_plainly(
    activities: McpActivities,
) -> None:
    call = McpCallInput(turn_id="turn-1", call_id="toolu_1", name="mcp__demo__add")
    call.input.update({"a": 2, "b": 3})

    started = await run(activities.tasks.mcp_start_task, call)

    assert started.task is None and started.result is not None
    assert started.result.content == "5"


async def test_a_2025_task_of_server_everything_is_cancelled_and_then_polled_as_cancelled(
    activities: McpActivities,
) -> None:
    call = McpCallInput(
        turn_id="turn-1",
        call_id="toolu_1",
        name="mcp__everything__simulate-research-query",
        input={"topic": "tides"},
    )
    started = await run(activities.tasks.mcp_start_task, call)
    assert started.task is not None and started.task.protocol == "2025-11-25"
    followed = McpTaskInput(turn_id="turn-1", call_id="toolu_1", task=started.task)

    cancelled = await run(activities.tasks.mcp_cancel_task, followed)
    polled = await run(activities.tasks.mcp_poll_task, followed)

    assert cancelled.cancelled, cancelled.detail
    assert polled.task.status == "cancelled"
    assert polled.result is not None and polled.result.is_error
    assert "was cancelled" in polled.result.content
