"""Served agents driven by clients nobody here wrote (docs/mcp-serve.md): the official MCP
TypeScript SDK's client (`tests/interop/mcp_client.mjs`) and the MCP Inspector CLI, each a Node
process of its own, against `turnkeeper serve --agents DIR` beside `python worker.py`. Both
list and call a served agent, including one whose write waits for approval: the SDK's client
answers the question through its elicitation handler; the Inspector CLI, which cannot answer
one, waits until the approval comes from the HTTP API."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import new_key
from tests.support.interop import INTEROP, NODE_MODULES, node, node_output, npm_bin
from tests.system.conftest import SystemStack
from tests.system.mcp_asking import reports, waiting_call
from tests.system.mcp_serving import Served, approval_agent, approve_over_http, serving_agents

CLIENT_SCRIPT = INTEROP / "mcp_client.mjs"
# A Node process's bound: a call that waits for a person returns within it once decided.
NODE_TIMEOUT_S = 120


async def run_node(*command: str | Path, cwd: Path | None = None) -> dict[str, Any]:
    """Runs a Node program to its end; its stdout's JSON (it must exit 0)."""
    return dict(json.loads(await node_output(*command, timeout_s=NODE_TIMEOUT_S, cwd=cwd)))


async def sdk_client(served: Served, name: str, *args: str) -> dict[str, Any]:
    """`node tests/interop/mcp_client.mjs --url … --token … args` as `name`."""
    token = served.tokens[name]
    return await run_node(node(), CLIENT_SCRIPT, "--url", served.mcp_url, "--token", token, *args)


async def inspector(served: Served, name: str, *args: str) -> dict[str, Any]:
    """`mcp-inspector-cli --cli URL --transport http …` as `name` (in CLI mode the server is
    the first argument; `--server-url` is the web client's). From `tests/interop/node_modules`:
    the CLI (1.0.3) finds its own package.json by `../package.json` from the working directory
    and fails where that file is missing."""
    return await run_node(
        npm_bin("mcp-inspector-cli"),
        "--cli",
        served.mcp_url,
        "--transport",
        "http",
        "--header",
        f"Authorization: Bearer {served.tokens[name]}",
        *args,
        cwd=NODE_MODULES,
    )


async def test_the_typescript_sdk_lists_calls_and_answers_approvals(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "agents"
    approval_agent(stack, folder, new_key(), "writer", description="Writes notes.")
    approval_agent(stack, folder, new_key(), "decliner")
    async with serving_agents(stack, folder, ("alice",)) as served:
        approved = await sdk_client(
            served, "alice", "--call", "writer", "--task", "Write.", "--answer", "approve"
        )
        declined = await sdk_client(
            served, "alice", "--call", "decliner", "--task", "Write.", "--answer", "decline"
        )
        ended = await reports(served, monkeypatch)

    assert {tool["name"] for tool in approved["tools"]} == {"writer", "decliner"}
    writer = next(tool for tool in approved["tools"] if tool["name"] == "writer")
    assert writer["description"] == "Writes notes."
    assert writer["inputSchema"]["required"] == ["task"]
    assert approved["result"]["content"][0]["text"] == "Done."
    [question] = approved["asked"]
    assert "write_file" in question["message"] and "out.md" in question["message"]
    assert question["requestedSchema"]["properties"]["approve"]["type"] == "boolean"
    [yes] = ended["writer"].decisions
    assert (yes.approver, yes.approved) == ("alice", True)
    [no] = ended["decliner"].decisions
    assert (no.approver, no.approved, no.reason) == ("alice", False, "declined over MCP")
    assert "error" not in declined and len(declined["asked"]) == 1


async def test_the_typescript_sdks_malformed_answer_decides_nothing(
    stack: SystemStack, tmp_path: Path
) -> None:
    folder = tmp_path / "agents"
    approval_agent(stack, folder, new_key(), "writer")
    async with serving_agents(stack, folder, ("alice",)) as served:
        refused = await sdk_client(
            served, "alice", "--call", "writer", "--task", "Write.", "--answer", "malformed"
        )
        waiting = await waiting_call(served, "alice")
        await approve_over_http(served, "alice", waiting["workflow_id"])

    assert "needs `approve`: true or false" in refused["error"]["message"]
    assert "nothing was decided" in refused["error"]["message"]
    assert waiting["tool"] == "write_file"


async def test_the_typescript_sdk_is_not_asked_where_it_is_no_approver(
    stack: SystemStack, tmp_path: Path
) -> None:
    folder = tmp_path / "agents"
    approval_agent(stack, folder, new_key(), "guarded", approvers=["ada"])
    async with serving_agents(stack, folder, ("alice",), ("ada",)) as served:
        calling = asyncio.create_task(
            sdk_client(served, "alice", "--call", "guarded", "--task", "Write.")
        )
        waiting = await waiting_call(served, "ada")
        assert not calling.done()
        await approve_over_http(served, "ada", waiting["workflow_id"])
        answered = await calling

    assert answered["asked"] == []
    assert answered["result"]["content"][0]["text"] == "Done."


async def test_the_inspector_cli_lists_and_calls_and_waits_for_the_inbox(
    stack: SystemStack, tmp_path: Path
) -> None:
    folder = tmp_path / "agents"
    approval_agent(stack, folder, new_key(), "writer", description="Writes notes.")
    async with serving_agents(stack, folder, ("alice",)) as served:
        listed = await inspector(served, "alice", "--method", "tools/list")
        calling = asyncio.create_task(
            inspector(
                served,
                "alice",
                "--method",
                "tools/call",
                "--tool-name",
                "writer",
                "--tool-arg",
                "task=Write the notes.",
            )
        )
        waiting = await waiting_call(served, "alice")
        assert not calling.done()
        await approve_over_http(served, "alice", waiting["workflow_id"])
        answered = await calling

    assert [tool["name"] for tool in listed["tools"]] == ["writer"]
    assert listed["tools"][0]["description"] == "Writes notes."
    assert answered["content"][0]["text"] == "Done."
