"""MCP tools in a whole turn: discovered at its start from real MCP servers (stdio and
streamable HTTP), offered under server-qualified names, called as activities."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import TurnRunner, make_settings, new_key, running_worker, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.mcp_http_process import DEMO_SERVER, HttpServerProcess

ROOT = Path(__file__).parent.parent.parent


@pytest.fixture
async def http_server() -> AsyncIterator[HttpServerProcess]:
    server = HttpServerProcess()
    await server.start()
    try:
        yield server
    finally:
        await server.kill()


@pytest.fixture
async def mcp_turns(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path, http_server: HttpServerProcess
) -> AsyncIterator[TurnRunner]:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "servers": {
                    "local": {"command": [sys.executable, str(DEMO_SERVER)]},
                    "web": {"url": http_server.url},
                    "gone": {"url": "http://127.0.0.1:9/mcp"},
                }
            }
        )
    )
    settings = dataclasses.replace(make_settings(tmp_path, f"tq-{uuid.uuid4()}"), mcp_config=config)
    async with running_worker(client, settings, fake_anthropic):
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic)


def results(report: AgentReport) -> list[ToolResultBlock]:
    return [b for b in report.messages[2].content if isinstance(b, ToolResultBlock)]


async def test_mcp_tools_over_stdio_and_http_in_one_turn(mcp_turns: TurnRunner) -> None:
    key = new_key()
    mcp_turns.fake.script(
        key,
        [
            fake.tool_calls(
                ("mcp__local__add", {"a": 2, "b": 3}),
                ("mcp__web__echo", {"text": "hi"}),
                ("mcp__local__fail", {}),
                ("mcp__local__add", {"a": "two"}),
            ),
            fake.text("done"),
        ],
    )
    tools = ["read_file", "mcp__local__*", "mcp__web__echo", "mcp__gone__ping"]

    report = await mcp_turns.run(scripted_request(key, agent={"tools": tools}))

    added, echoed, failed, invalid = results(report)
    assert added.text() == "5" and not added.is_error
    assert echoed.text() == "hi" and not echoed.is_error
    assert failed.is_error and "failed on purpose" in failed.text()
    assert invalid.is_error and "argument 'a'" in invalid.text()  # checked before it ran
    offered = {t["name"] for t in mcp_turns.fake.requests_for(key)[0].body["tools"]}
    assert {"mcp__local__add", "mcp__local__echo", "mcp__web__echo", "read_file"} <= offered
    assert "mcp__web__add" not in offered  # only the named tool of that server
    assert not any(name.startswith("mcp__gone") for name in offered)  # its server is down
    assert report.tool_calls == 3


async def test_a_worker_without_mcp_servers_runs_the_turn_without_their_tools(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("no MCP here")])

    report = await turns.run(scripted_request(key, agent={"tools": ["read_file", "mcp__web__*"]}))

    assert report.output == "no MCP here"
    offered = {t["name"] for t in turns.fake.requests_for(key)[0].body["tools"]}
    assert offered == {"read_file"}


def test_a_worker_without_mcp_servers_does_not_load_the_mcp_sdk(tmp_path: Path) -> None:
    # The SDK is 25 MiB of a worker's memory; only workers with servers should pay for it.
    code = (
        "import sys; from pathlib import Path; "
        "from turnkeeper.worker.wiring import build_activities; "
        "from turnkeeper.worker.settings import Settings; "
        f"build_activities(Settings('q', Path({str(tmp_path)!r}), Path({str(tmp_path)!r}), "
        f"Path({str(tmp_path)!r}))); print('mcp' in sys.modules)"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert loaded.stdout.strip() == "False"
