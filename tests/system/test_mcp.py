"""MCP servers in `python worker.py`: the JSON file named by `TURNKEEPER_MCP_CONFIG`, a stdio
server the worker starts itself (`turnkeeper/testing/mcp_demo_server.py`), and a turn whose model
calls its tools by their README names (`mcp__<server>__<tool>`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as anthropic
from tests.support.mcp_http_process import DEMO_SERVER, HttpServerProcess
from tests.system.conftest import SystemStack
from tests.system.driving import agent, connect_like, task


def mcp_config(folder: Path, servers: dict[str, Any]) -> Path:
    path = folder / "mcp.json"
    path.write_text(json.dumps({"servers": servers}))
    return path


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results of a request's newest message, as the model receives them."""
    return [b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"]


async def test_a_turn_calls_the_tools_of_a_stdio_server(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    servers = {
        "demo": {"command": [sys.executable, str(DEMO_SERVER)]},
        # Exits at once: a server that is down costs only its own tools.
        "gone": {"command": [sys.executable, "-c", "raise SystemExit(3)"], "connect_timeout_s": 5},
    }
    worker = await stack.start_worker(
        env={"TURNKEEPER_MCP_CONFIG": str(mcp_config(tmp_path, servers))}
    )
    key = new_key()
    stack.fake.script(
        key,
        [
            anthropic.tool_calls(("mcp__demo__add", {"a": 2, "b": 3}), ("mcp__demo__fail", {})),
            anthropic.text("2 + 3 = 5; the other tool failed."),
        ],
    )
    client = await connect_like(worker, monkeypatch)

    tools = ["mcp__demo__add", "mcp__demo__fail", "mcp__gone__*"]
    handle = await turnkeeper.start_turn(client, agent=agent(key, tools=tools), task=task(key))
    report = await handle.result()

    assert (report.output, report.tool_calls) == ("2 + 3 = 5; the other tool failed.", 2)
    first, second = (request.body for request in stack.fake.requests_for(key))
    assert sorted(tool["name"] for tool in first["tools"]) == ["mcp__demo__add", "mcp__demo__fail"]
    added, failed = tool_results(second)
    assert "5" in json.dumps(added["content"]) and not added.get("is_error")
    assert failed["is_error"] and "failed on purpose" in json.dumps(failed["content"])
    logged = {(line["tool"], line["outcome"]) for line in worker.events("tool_call")}
    assert logged == {("mcp__demo__add", "ok"), ("mcp__demo__fail", "error")}


async def test_an_http_server_gets_its_header_from_the_workers_environment(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = HttpServerProcess()
    await server.start()
    try:
        servers = {"web": {"url": server.url, "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}}}
        config = mcp_config(tmp_path, servers)
        worker = await stack.start_worker(
            env={"TURNKEEPER_MCP_CONFIG": str(config), "WEB_TOKEN": "web-s3cret"}
        )
        key = new_key()
        stack.fake.script(
            key, [anthropic.tool_calls(("mcp__web__whoami", {})), anthropic.text("Known.")]
        )
        client = await connect_like(worker, monkeypatch)

        tools = ["mcp__web__*"]
        handle = await turnkeeper.start_turn(client, agent=agent(key, tools=tools), task=task(key))
        report = await handle.result()
    finally:
        await server.kill()

    assert (report.output, report.tool_calls) == ("Known.", 1)
    [seen] = tool_results(stack.fake.requests_for(key)[1].body)
    assert "Bearer web-s3cret" in json.dumps(seen["content"])
    # The file keeps the ${NAME} form; the secret is never logged.
    assert "web-s3cret" not in worker.log_path.read_text()
