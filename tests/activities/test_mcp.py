"""The MCP activities against a real MCP server (`turnkeeper/testing/mcp_demo_server.py`), over
stdio (the activity starts it) and over streamable HTTP (a subprocess the tests kill and
restart)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import mcp
import pytest
import structlog
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.mcp import connections
from turnkeeper.activities.mcp.config import (
    HttpServerConfig,
    McpConfig,
    McpServerConfig,
    StdioServerConfig,
)
from turnkeeper.activities.mcp.mcp_activity import McpActivities
from turnkeeper.contracts.activity_io import ToolCallResult
from turnkeeper.contracts.mcp import McpCallInput, McpListToolsInput, McpListToolsResult
from turnkeeper.contracts.messages import ToolResultBlock

from tests.support.mcp_http_process import DEMO_SERVER, HttpServerProcess, free_port
from turnkeeper.payloads.content_store import LocalFolderStore


def stdio_server(name: str = "demo", **options: Any) -> StdioServerConfig:
    options.setdefault("timeout_s", 10.0)
    return StdioServerConfig(name=name, command=[sys.executable, str(DEMO_SERVER)], **options)


def http_server(url: str, name: str = "web", **options: Any) -> HttpServerConfig:
    options.setdefault("connect_timeout_s", 5.0)
    return HttpServerConfig(name=name, url=url, **options)


@dataclasses.dataclass
class Mcp:
    activities: McpActivities
    store: LocalFolderStore

    async def list_tools(self, servers: list[str] | None = None) -> McpListToolsResult:
        request = McpListToolsInput(servers=servers, turn_id="turn-1")
        return await ActivityEnvironment().run(self.activities.mcp_list_tools, request)

    async def call(
        self, name: str, env: ActivityEnvironment | None = None, **arguments: Any
    ) -> ToolCallResult:
        call = McpCallInput(turn_id="turn-1", call_id="toolu_1", name=name, input=arguments)
        return await (env or ActivityEnvironment()).run(self.activities.mcp_call_tool, call)


@pytest.fixture
async def make_mcp(tmp_path: Path) -> AsyncIterator[Any]:
    opened: list[McpActivities] = []

    def make(*servers: McpServerConfig, **options: Any) -> Mcp:
        config = McpConfig(servers={server.name: server for server in servers})
        store = LocalFolderStore(tmp_path / "store")
        options.setdefault("environ", {"WEB_TOKEN": "s3cret"})
        opened.append(McpActivities(config, store, **options))
        return Mcp(opened[-1], store)

    yield make
    for activities in opened:
        await activities.aclose()


@pytest.fixture
async def stdio(make_mcp: Any) -> Mcp:
    return make_mcp(stdio_server())


@pytest.fixture
async def http_process() -> AsyncIterator[HttpServerProcess]:
    process = HttpServerProcess()
    await process.start()
    yield process
    await process.kill()


async def test_discovery_offers_qualified_names_with_the_servers_schemas(stdio: Mcp) -> None:
    listing = await stdio.list_tools()
    assert listing.errors == []
    tools = {tool.name: tool for tool in listing.tools}
    assert {"mcp__demo__add", "mcp__demo__echo", "mcp__demo__fail"} <= set(tools)
    add = tools["mcp__demo__add"]
    assert (add.server, add.tool, add.description) == ("demo", "add", "Add two integers.")
    assert add.input_schema["required"] == ["a", "b"]
    assert add.definition().name == "mcp__demo__add"
    assert add.timeout_s == 10.0
    assert add.activity_timeout_s == 3 * 30.0 + 10.0 + 10.0
    # A name the model API would refuse is sanitised, and still reaches the server's tool.
    weird = tools["mcp__demo__weird_name"]
    assert weird.tool == "weird.name"
    result = await stdio.call("mcp__demo__weird_name")
    assert (result.content, result.is_error) == ("weird ok", False)


async def test_a_call_stores_its_result_block_and_logs_no_arguments(stdio: Mcp) -> None:
    with structlog.testing.capture_logs() as logs:
        result = await stdio.call("mcp__demo__add", a=2, b=40)
        echoed = await stdio.call("mcp__demo__echo", text="private words")
    assert (result.content, result.is_error) == ("42", False)
    stored = ToolResultBlock.model_validate_json(await stdio.store.get(result.block_ref))
    assert stored == ToolResultBlock(tool_use_id="toolu_1", content="42", is_error=False)
    assert echoed.content == "private words"
    events = [entry for entry in logs if entry["event"] == "tool_call"]
    assert events[0]["tool"] == "mcp__demo__add"
    assert events[0]["server"] == "demo"
    assert events[0]["outcome"] == "ok"
    assert isinstance(events[0]["duration_ms"], int)
    assert "private words" not in repr(logs)


async def test_error_results_and_raising_tools_are_error_results(stdio: Mcp) -> None:
    failed = await stdio.call("mcp__demo__fail")
    assert failed.is_error
    assert "failed on purpose" in failed.content
    crashed = await stdio.call("mcp__demo__crash")
    assert crashed.is_error
    assert "crash" in crashed.content
    unknown = await stdio.call("mcp__demo__no_such_tool")
    assert unknown.is_error


async def test_names_that_are_no_mcp_tool_of_this_worker_are_error_results(stdio: Mcp) -> None:
    not_mcp = await stdio.call("read_file")
    assert not_mcp.is_error
    assert "mcp__<server>__<tool>" in not_mcp.content
    other = await stdio.call("mcp__elsewhere__add")
    assert other.is_error
    assert "'elsewhere'" in other.content
    listing = await stdio.list_tools(["demo", "elsewhere"])
    assert listing.tools
    assert listing.errors == [
        "MCP server 'elsewhere' is not configured on this worker (configured: demo)"
    ]


async def test_json_is_compact_and_images_are_refused_in_words(stdio: Mcp) -> None:
    looked_up = await stdio.call("mcp__demo__lookup", key="k")
    assert looked_up.content == '{"key":"k","values":[1,2,3],"found":true}'
    picture = await stdio.call("mcp__demo__picture")
    assert not picture.is_error
    assert picture.content.startswith("here is the chart\n")
    assert "image (image/png)" in picture.content
    chart = await stdio.call("mcp__demo__chart")
    assert chart.is_error
    assert "cannot be shown to the model" in chart.content


async def test_a_slow_call_times_out_and_the_next_call_works(make_mcp: Any) -> None:
    mcp = make_mcp(stdio_server(timeout_s=0.5))
    result = await mcp.call("mcp__demo__slow", seconds=5)
    assert result.is_error
    assert result.content == "MCP tool 'slow' of server 'demo' timed out after 0.5 s"
    assert (await mcp.call("mcp__demo__add", a=1, b=1)).content == "2"


async def test_a_long_call_heartbeats(stdio: Mcp) -> None:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timedelta(seconds=0.2))
    two_beats = asyncio.Event()
    beats: list[tuple[Any, ...]] = []

    def beat(*details: Any) -> None:
        beats.append(details)
        if len(beats) == 2:
            two_beats.set()

    env.on_heartbeat = beat
    # Long enough that the call is still running when two beats came, however slow the machine.
    call = asyncio.create_task(stdio.call("mcp__demo__slow", env=env, seconds=30))
    await asyncio.wait_for(two_beats.wait(), 30)
    assert not call.done()
    env.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, 5)


async def test_a_stdio_server_that_dies_mid_call_is_started_again(stdio: Mcp) -> None:
    died = await stdio.call("mcp__demo__exit_server")
    assert died.is_error
    assert "closed the connection during the call of 'exit_server'" in died.content
    assert (await stdio.call("mcp__demo__add", a=2, b=2)).content == "4"


async def test_a_server_that_is_not_running_is_reported_not_raised(make_mcp: Any) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}/mcp"
    missing = StdioServerConfig(name="gone", command=["/nonexistent/mcp-server"])
    mcp = make_mcp(http_server(nowhere, name="down"), missing, stdio_server())
    listing = await mcp.list_tools()
    assert {tool.server for tool in listing.tools} == {"demo"}
    assert len(listing.errors) == 2
    down, gone = sorted(listing.errors)
    assert down.startswith("MCP server 'down' is unavailable: ConnectError")
    assert gone.startswith("MCP server 'gone' is unavailable:")
    result = await mcp.call("mcp__down__add", a=1, b=2)
    assert result.is_error
    assert result.content.startswith("MCP server 'down' is unavailable")


async def test_streamable_http_with_headers_from_the_environment(
    make_mcp: Any, http_process: HttpServerProcess
) -> None:
    server = http_server(http_process.url, headers={"Authorization": "Bearer ${WEB_TOKEN}"})
    mcp = make_mcp(server)
    listing = await mcp.list_tools()
    assert "mcp__web__add" in {tool.name for tool in listing.tools}
    assert (await mcp.call("mcp__web__add", a=20, b=22)).content == "42"
    who = json.loads((await mcp.call("mcp__web__whoami")).content)
    assert who == {"authorization": "Bearer s3cret", "idempotency_key": "turn-1/toolu_1"}
    assert "s3cret" not in repr(server)


async def test_an_http_server_restarted_between_calls_is_reconnected(
    make_mcp: Any, http_process: HttpServerProcess
) -> None:
    mcp = make_mcp(http_server(http_process.url), probe_after_idle_s=0.0)
    assert (await mcp.call("mcp__web__add", a=1, b=2)).content == "3"
    await http_process.kill()
    await http_process.start()
    after_restart = await mcp.call("mcp__web__add", a=3, b=4)
    assert (after_restart.content, after_restart.is_error) == ("7", False)


async def test_an_http_server_down_for_one_call_is_reconnected_after(
    make_mcp: Any, http_process: HttpServerProcess
) -> None:
    mcp = make_mcp(http_server(http_process.url), probe_after_idle_s=0.0)
    assert (await mcp.call("mcp__web__add", a=1, b=2)).content == "3"
    await http_process.kill()
    while_down = await mcp.call("mcp__web__add", a=1, b=2)
    assert while_down.is_error
    assert while_down.content.startswith("MCP server 'web' is unavailable")
    await http_process.start()
    assert (await mcp.call("mcp__web__add", a=5, b=5)).content == "10"


async def test_cancelling_the_activity_cancels_the_call(stdio: Mcp) -> None:
    assert (await stdio.call("mcp__demo__add", a=1, b=1)).content == "2"  # connected
    env = ActivityEnvironment()
    call = asyncio.create_task(stdio.call("mcp__demo__slow", env=env, seconds=30))
    await asyncio.sleep(0.3)
    env.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, 5)
    # The connection survives a cancelled call.
    assert (await stdio.call("mcp__demo__add", a=2, b=3)).content == "5"


async def test_a_session_server_restarted_between_calls_is_reconnected(
    make_mcp: Any, http_process: HttpServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Servers on the handshake-era protocol keep a session that a restart forgets: the probe
    # before the call finds it gone, and the call runs on a new session.
    monkeypatch.setattr(connections, "Client", functools.partial(mcp.Client, mode="legacy"))
    mcp_activities = make_mcp(http_server(http_process.url), probe_after_idle_s=0.0)
    assert (await mcp_activities.call("mcp__web__add", a=1, b=2)).content == "3"
    await http_process.kill()
    await http_process.start()
    with structlog.testing.capture_logs() as logs:
        after_restart = await mcp_activities.call("mcp__web__add", a=3, b=4)
    assert (after_restart.content, after_restart.is_error) == ("7", False)
    assert [entry["server"] for entry in logs if entry["event"] == "mcp_reconnect"] == ["web"]


async def test_a_listing_is_reused_within_its_ttl(
    make_mcp: Any, http_process: HttpServerProcess
) -> None:
    cached = make_mcp(http_server(http_process.url), discovery_ttl_s=60.0)
    fresh = make_mcp(http_server(http_process.url), discovery_ttl_s=0.0)
    assert (await cached.list_tools()).tools
    assert (await fresh.list_tools()).tools
    await http_process.kill()
    assert (await cached.list_tools()).errors == []
    assert (await fresh.list_tools()).errors[0].startswith("MCP server 'web'")
