"""Agents as MCP tools (docs/mcp-serve.md): `turnkeeper serve --agents DIR` as a process of its
own beside `python worker.py`, driven by the official Python MCP client in both protocol eras:
the agent files listed as tools, a plain call answered with the turn's report, the turn owned by
the token's identity and billed to its tenant."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.conftest import SystemStack
from tests.system.driving import connect_like
from tests.system.mcp_serving import (
    ERAS,
    Era,
    audit_lines,
    mcp_client,
    serving_agents,
    write_agent,
)

SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}},
    "required": ["title"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("era", ERAS)
async def test_agent_files_are_tools_and_a_call_answers_with_the_report(
    stack: SystemStack, tmp_path: Path, era: Era, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain, typed = new_key(), new_key()
    folder = tmp_path / "agents"
    write_agent(folder, plain, "helper", description="Answers questions about the workspace.")
    write_agent(folder, typed, "titler", output_schema=SCHEMA)
    stack.fake.script(plain, [fake.text("The workspace is empty.")])
    stack.fake.script(typed, [fake.text('{"title": "Notes"}')])
    # A name and tenant of this test's own: the dev server holds every test's turns, and a
    # tenant's ledger runs on the queue of the worker it met first.
    bob, tenant = f"bob-{plain}", f"acme-{plain}"
    async with serving_agents(stack, folder, (bob, "--tenant", tenant)) as served:
        async with mcp_client(served.mcp_url, served.tokens[bob], era) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            answered = await client.call_tool("helper", {"task": "What is there?"})
            structured = await client.call_tool("titler", {"task": "Title it."})
        signed_in = {"Authorization": f"Bearer {served.tokens[bob]}"}
        async with httpx.AsyncClient(base_url=served.url, headers=signed_in) as http:
            listed_turns = (await http.get("/v1/turns")).json()
        client = await connect_like(served.worker, monkeypatch)
        reports = [await turnkeeper.turn(client, t["workflow_id"]).result() for t in listed_turns]

    assert sorted(listed) == ["helper", "titler"]
    helper, titler = listed["helper"], listed["titler"]
    assert helper.description == "Answers questions about the workspace."
    assert helper.input_schema["required"] == ["task"]
    assert helper.input_schema["properties"]["task"]["type"] == "string"
    assert titler.output_schema == SCHEMA and helper.output_schema is None
    if era == "legacy":
        assert helper.execution is not None and helper.execution.task_support == "optional"
    assert not answered.is_error and answered.content[0].text == "The workspace is empty."
    assert not structured.is_error and structured.structured_content == {"title": "Notes"}
    assert "What is there?" in str(stack.fake.requests_for(plain)[0].body["messages"])
    # Started as `POST /v1/turns` would: owned by the token's identity, billed to its tenant.
    assert sorted(t["agent_id"] for t in listed_turns) == ["helper", "titler"]
    assert all(t["workflow_id"].startswith("mcp-") for t in listed_turns)
    assert {(r.started_by, r.tenant) for r in reports} == {(bob, tenant)}
    # And audited as the API's starts are: who, which turn, the status.
    audited = audit_lines(stack, "mcp:start")
    assert [(a["identity"], a["status"]) for a in audited] == [(bob, 201), (bob, 201)]
    assert sorted(a["turn"] for a in audited) == sorted(t["workflow_id"] for t in listed_turns)


async def test_mcp_refuses_a_caller_without_a_valid_token_or_from_a_foreign_page(
    stack: SystemStack, tmp_path: Path
) -> None:
    folder = tmp_path / "agents"
    write_agent(folder, new_key(), "helper")
    allowed = "https://inbox.example"
    # An identity of this test's own: the operator's `GET /v1/turns` lists every test's turns.
    served_at = serving_agents(
        stack, folder, ("origin-checker",), options=("--cors-origin", allowed)
    )
    async with served_at as served, httpx.AsyncClient() as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        missing = await http.post(served.mcp_url, json=body)
        wrong = await http.post(
            served.mcp_url, json=body, headers={"Authorization": "Bearer tk_wrong"}
        )
        signed_in = {"Authorization": f"Bearer {served.tokens['origin-checker']}"}
        # A page of another site (a DNS-rebinding attack, or any foreign page holding a token).
        foreign = await http.post(
            served.mcp_url, json=body, headers={**signed_in, "Origin": "http://evil.example"}
        )
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "inbox-page", "version": "1"},
            },
        }
        accept = {"Accept": "application/json, text/event-stream"}
        own_page = await http.post(
            served.mcp_url, json=hello, headers={**signed_in, **accept, "Origin": allowed}
        )
        turns = await http.get(served.url + "/v1/turns", headers=signed_in)
    assert missing.status_code == 401 and wrong.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    assert "invalid token" in wrong.json()["detail"]
    assert foreign.status_code == 403
    assert foreign.json() == {"detail": "origin 'http://evil.example' may not call /mcp"}
    assert own_page.status_code == 200, own_page.text  # an origin `--cors-origin` names
    assert [t for t in turns.json() if t["started_by"] == "origin-checker"] == []
