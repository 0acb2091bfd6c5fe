"""Approvals over MCP (docs/mcp-serve.md, Approvals over MCP): `turnkeeper serve --agents DIR`
as its own process beside `python worker.py`, driven by the official Python MCP client in both
eras. The caller is asked (tool, input, why) through elicitation, or `input_required` in
2026-07-28, and its answer is the token identity's decision; an identity that is not an
approver is not asked; a malformed answer decides nothing; a task asks through `tasks/result`
(2025-11-25) or `tasks/get` and `tasks/update` (2026-07-28)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.conftest import SystemStack
from tests.system.driving import agent
from tests.system.mcp_asking import (
    APPROVE,
    MALFORMED,
    answering_client,
    reports,
    waiting_call,
    wire,
)
from tests.system.mcp_serving import (
    ERAS,
    MODERN,
    CreatedTask,
    Era,
    approval_agent,
    approve_over_http,
    legacy_task_call,
    polled,
    task_request,
    write_agent,
)
from tests.system.test_mcp_serve_tasks import status_is

RELATED_TASK = "io.modelcontextprotocol/related-task"


@pytest.mark.parametrize("era", ERAS)
async def test_the_caller_is_asked_and_its_answer_is_its_decision(
    stack: SystemStack, tmp_path: Path, era: Era, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "agents"
    approval_agent(stack, folder, new_key(), "writer")
    async with answering_client(stack, folder, era, APPROVE) as asked:
        result = await asked.client.call_tool("writer", {"task": "Write the notes."})
        report = (await reports(asked.served, monkeypatch))["writer"]

    assert not result.is_error and result.content[0].text == "Done."
    [question] = asked.questions
    assert "write_file" in question.message and '"path": "out.md"' in question.message
    assert "Why: this agent's calls of write_file wait for approval" in question.message
    assert question.requested_schema["required"] == ["approve"]
    [decision] = report.decisions
    assert (decision.approver, decision.approved, decision.reason) == ("alice", True, "fine")
    assert (asked.served.worker.workspace / "out.md").read_text() == "hi"


@pytest.mark.parametrize("era", ERAS)
async def test_a_malformed_answer_is_refused_and_decides_nothing(
    stack: SystemStack, tmp_path: Path, era: Era
) -> None:
    folder = tmp_path / "agents"
    approval_agent(stack, folder, new_key(), "writer")
    async with answering_client(stack, folder, era, MALFORMED) as asked:
        with pytest.raises(MCPError) as refused:
            await asked.client.call_tool("writer", {"task": "Write the notes."})
        # Nothing was decided: the call still waits, and the inbox can still decide it.
        waiting = await waiting_call(asked.served, "alice")
        await approve_over_http(asked.served, "alice", waiting["workflow_id"])

    assert len(asked.questions) == 1
    assert "needs `approve`: true or false" in refused.value.message
    assert "nothing was decided" in refused.value.message
    assert waiting["tool"] == "write_file"


async def test_an_identity_that_is_not_an_approver_is_not_asked(
    stack: SystemStack, tmp_path: Path
) -> None:
    folder = tmp_path / "agents"
    approval_agent(stack, folder, new_key(), "guarded", approvers=["ada"])
    async with answering_client(stack, folder, "legacy", APPROVE, ("ada",)) as asked:
        calling = asyncio.create_task(asked.client.call_tool("guarded", {"task": "Write."}))
        waiting = await waiting_call(asked.served, "ada")
        assert not calling.done()
        await approve_over_http(asked.served, "ada", waiting["workflow_id"])
        result = await calling

    assert asked.questions == [] and result.content[0].text == "Done."


async def test_a_2025_task_asks_through_tasks_result(stack: SystemStack, tmp_path: Path) -> None:
    folder = tmp_path / "agents"
    approval_agent(stack, folder, new_key(), "writer")
    async with answering_client(stack, folder, "legacy", APPROVE) as asked:
        created = await legacy_task_call(asked.client, "writer", {"task": "Write the notes."})
        task_id = created["task"]["taskId"]
        await polled(asked.client, task_id, status_is("input_required"), "the task to wait")
        result = await task_request(asked.client, "tasks/result", taskId=task_id)

    assert result["content"][0]["text"] == "Done."
    [question] = asked.questions
    assert question.meta is not None and question.meta[RELATED_TASK] == {"taskId": task_id}


async def test_a_2026_task_lists_its_question_and_takes_the_answer_by_update(
    stack: SystemStack, tmp_path: Path
) -> None:
    folder = tmp_path / "agents"
    approval_agent(stack, folder, new_key(), "writer")
    async with answering_client(stack, folder, MODERN, APPROVE, tasks=True) as asked:
        client = asked.client
        created = await client.session.call_tool("writer", {"task": "W."}, allow_claimed=True)
        assert isinstance(created, CreatedTask)
        task_id = created.task_id
        asking = await polled(client, task_id, status_is("input_required"), "a question")
        [(key, request)] = asking["inputRequests"].items()
        with pytest.raises(MCPError, match="nothing was decided"):
            await update(client, task_id, {key: wire(MALFORMED)})
        still = await task_request(client, "tasks/get", taskId=task_id)
        acknowledged = await update(client, task_id, {key: wire(APPROVE)})
        done = await polled(client, task_id, status_is("completed"), "the task to complete")

    # The task's questions are answered through tasks/update, never sent mid-call.
    assert asked.questions == []
    assert request["method"] == "elicitation/create"
    assert "write_file" in request["params"]["message"]
    assert still["status"] == "input_required" and key in still["inputRequests"]
    assert acknowledged["resultType"] == "complete"
    assert done["result"]["content"][0]["text"] == "Done."


async def test_a_sub_agents_approval_is_put_to_the_caller(
    stack: SystemStack, tmp_path: Path
) -> None:
    lead_key, writer_key = new_key(), new_key()
    delegate = fake.tool_calls(("writer", {"task": "save it"}))
    stack.fake.script(lead_key, [delegate, fake.text("Done.")])
    write = fake.tool_calls(("write_file", {"path": "out.md", "content": "hi"}))
    stack.fake.script(writer_key, [write, fake.text("Saved.")])
    writer = agent(writer_key, id="writer-agent", tools=["write_file"])
    folder = tmp_path / "agents"
    subagents = [{"name": "writer", "description": "Writes.", "agent": writer}]
    write_agent(folder, lead_key, "lead", subagents=subagents)
    async with answering_client(stack, folder, "legacy", APPROVE) as asked:
        result = await asked.client.call_tool("lead", {"task": "Have it saved."})

    assert result.content[0].text == "Done."
    [question] = asked.questions
    assert "Agent: writer-agent" in question.message
    assert "sub-agent 'writer-agent'" in question.message
    assert (asked.served.worker.workspace / "out.md").read_text() == "hi"


async def update(client: Client, task_id: str, responses: dict[str, Any]) -> dict[str, Any]:
    """`tasks/update` with `responses` as its `inputResponses`."""
    return await task_request(client, "tasks/update", taskId=task_id, inputResponses=responses)
