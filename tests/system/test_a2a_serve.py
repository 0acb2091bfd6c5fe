"""Served agents over A2A (docs/a2a.md): `turnkeeper serve --agents DIR` as a process of its
own beside `python worker.py`, driven by the official Python client (`a2a-sdk`): the agent's
card, a message answered with the turn's answer as an artifact, the context continued as one
conversation, the answer streamed as the turn writes it, an approval asked as `input-required`
and answered with a decision, `tasks/cancel` as an interrupt, and a task read by another
server process."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import httpx2 as httpx
import pytest
from a2a.types import CancelTaskRequest, GetTaskRequest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.a2a_serving import (
    CANCELED,
    COMPLETED,
    INPUT_REQUIRED,
    a2a_client,
    agent_url,
    answer,
    ask,
    events,
    last_task,
    streamed_text,
    waiting_call,
)
from tests.system.conftest import SystemStack
from tests.system.driving import agent, connect_like
from tests.system.mcp_serving import approval_agent, serving_agents, write_agent, writer_folder
from tests.system.serving import serving


async def test_a_message_is_a_turn_of_the_context_and_its_answer_an_artifact(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    write_agent(folder, key, "helper", description="Answers questions about the workspace.")
    stack.fake.script(key, [fake.text("The workspace is empty."), fake.text("Still empty.")])
    bob = f"bob-{key}"
    async with serving_agents(stack, folder, (bob,)) as served:
        signed_in = {"Authorization": f"Bearer {served.tokens[bob]}"}
        async with httpx.AsyncClient() as http:
            card_url = agent_url(served, "helper") + "/.well-known/agent-card.json"
            card = (await http.get(card_url, headers=signed_in)).json()
        async with a2a_client(served, bob, "helper", streaming=False) as client:
            [first] = await events(client, ask("What is there?"))
            context_id = first.task.context_id
            [second] = await events(client, ask("And now?", context_id))
        client_temporal = await connect_like(served.worker, monkeypatch)
        report = await turnkeeper.turn(client_temporal, second.task.id).result()

    assert card["name"] == "helper"
    assert card["description"] == "Answers questions about the workspace."
    assert card["capabilities"]["streaming"] is True
    assert card["supportedInterfaces"][0]["url"] == agent_url(served, "helper")
    assert card["supportedInterfaces"][0]["protocolBinding"] == "JSONRPC"
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    assert [skill["id"] for skill in card["skills"]] == ["helper"]
    assert first.task.status.state == COMPLETED
    assert [p.text for a in first.task.artifacts for p in a.parts] == ["The workspace is empty."]
    # One context, one conversation: the second turn is its next, and the model saw the first.
    assert second.task.context_id == context_id and second.task.id != first.task.id
    assert second.task.status.state == COMPLETED
    assert "The workspace is empty." in str(stack.fake.requests_for(key)[1].body["messages"])
    assert report.started_by == bob and report.output == "Still empty."


async def test_the_answer_streams_and_an_approval_is_asked_and_decided(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    approval_agent(stack, folder, key, "writer", stream=True)
    alice = f"alice-{key}"
    async with serving_agents(stack, folder, (alice,)) as served:
        async with a2a_client(served, alice, "writer") as client:
            asked = await events(client, ask("Write the note."))
            waiting = last_task(asked)
            call = waiting_call(waiting)
            decided = await events(
                client, answer(waiting, {"call_id": call["call_id"], "approved": True})
            )
        client_temporal = await connect_like(served.worker, monkeypatch)
        report = await turnkeeper.turn(client_temporal, waiting.id).result()

    # The stream: the task, then the status it stops at, which names the waiting call.
    assert asked[0].HasField("task") and asked[0].task.id == waiting.id
    assert waiting.status.state == INPUT_REQUIRED
    assert call["tool"] == "write_file" and call["input"] == {"path": "out.md", "content": "hi"}
    assert call["call_id"] in waiting.status.message.parts[0].text
    # The decision: the turn goes on, its answer streams, it completes.
    finished = last_task(decided)
    assert finished.id == waiting.id and finished.status.state == COMPLETED
    assert streamed_text(decided) == "Done."
    # Decided by the token's identity, as `POST /v1/turns/{id}/decisions` would have.
    assert [(d.call_id, d.approved, d.approver) for d in report.decisions] == [
        (call["call_id"], True, alice)
    ]
    assert (served.worker.workspace / "out.md").read_text() == "hi"


# Two `turnkeeper serve` processes start one after the other (each connects to Temporal).
@pytest.mark.timeout(240)
async def test_cancel_interrupts_the_turn_and_another_server_reads_the_task(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, carol = writer_folder(stack, tmp_path)
    async with serving_agents(stack, folder, (carol,)) as served:
        async with a2a_client(served, carol, "writer") as client:
            waiting = last_task(await events(client, ask("Write the note.")))
            cancelled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
        # A second server process, which never saw the task: Temporal holds it.
        options = ("--agents", str(folder))
        async with serving(stack, served.worker, *options, log_name="serve2.log") as other:
            elsewhere = replace(served, url=other)
            async with a2a_client(elsewhere, carol, "writer") as client:
                read = await client.get_task(GetTaskRequest(id=waiting.id))
        client_temporal = await connect_like(served.worker, monkeypatch)
        report = await turnkeeper.turn(client_temporal, waiting.id).result()

    assert waiting.status.state == INPUT_REQUIRED
    assert cancelled.id == waiting.id and cancelled.status.state == CANCELED
    assert read.status.state == CANCELED and read.context_id == waiting.context_id
    # An interrupt by the caller: the turn ends `interrupted`, its call never ran.
    assert report.outcome == "interrupted"
    assert [i.author for i in report.interventions] == [carol]
    assert not (served.worker.workspace / "out.md").exists()


async def test_a_sub_agents_approval_is_input_required_of_the_task(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
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
    heidi = f"heidi-{lead_key}"
    async with serving_agents(stack, folder, (heidi,)) as served:
        async with a2a_client(served, heidi, "lead") as client:
            waiting = last_task(await events(client, ask("Have it saved.")))
            call = waiting_call(waiting)
            approve = answer(waiting, {"call_id": call["call_id"], "approved": True})
            decided = await events(client, approve)
        client_temporal = await connect_like(served.worker, monkeypatch)
        report = await turnkeeper.turn(client_temporal, waiting.id).result()

    # The call waits in the sub-agent's turn; the task that the caller holds says so.
    assert waiting.status.state == INPUT_REQUIRED and call["tool"] == "write_file"
    assert last_task(decided).status.state == COMPLETED and streamed_text(decided) == "Done."
    assert report.output == "Done." and report.started_by == heidi
    assert (served.worker.workspace / "out.md").read_text() == "hi"
