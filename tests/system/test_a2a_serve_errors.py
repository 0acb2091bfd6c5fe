"""What a served A2A agent refuses (docs/a2a.md, Errors), sent wrong on purpose to a real
`turnkeeper serve --agents DIR`: no token, an agent that is not served, a message that starts
nothing, someone else's task and context, a decision for a call that does not wait. Each is a
clear error (HTTP for the first two, JSON-RPC after), and nothing is started or decided."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from a2a.types import CancelTaskRequest, GetTaskRequest, TaskNotFoundError
from a2a.utils.errors import InvalidParamsError

import turnkeeper
from tests.system.a2a_serving import (
    INPUT_REQUIRED,
    a2a_client,
    agent_url,
    answer,
    api,
    ask,
    events,
    last_task,
    rpc,
    waiting_call,
)
from tests.system.conftest import SystemStack
from tests.system.driving import connect_like
from tests.system.mcp_serving import Served, serving_agents, writer_folder

TASK_NOT_FOUND = -32001
INVALID_PARAMS = -32602


async def _error(served: Served, name: str, method: str, params: Any) -> dict[str, Any]:
    answered = await rpc(served, name, "writer", method, params)
    assert answered.status_code == 200, answered.text
    error: dict[str, Any] = answered.json()["error"]
    return error


async def _turns_of(served: Served, name: str) -> list[dict[str, Any]]:
    listed = (await api(served, name, "GET", "/v1/turns")).json()
    return [turn for turn in listed if turn["started_by"] == name]


async def test_no_token_and_an_agent_not_served_are_refused_over_http(
    stack: SystemStack, tmp_path: Path
) -> None:
    folder, dana = writer_folder(stack, tmp_path)
    async with serving_agents(stack, folder, (dana,)) as served:
        async with httpx.AsyncClient() as http:
            card = await http.get(agent_url(served, "writer") + "/.well-known/agent-card.json")
        unsigned = await rpc(served, None, "writer", "SendMessage", {})
        unknown = await rpc(served, dana, "nobody", "SendMessage", {})
        turns = await _turns_of(served, dana)

    assert card.status_code == 401 and unsigned.status_code == 401
    assert unsigned.headers["www-authenticate"] == "Bearer"
    assert unknown.status_code == 404
    assert unknown.json() == {"detail": "no agent 'nobody' is served here"}
    assert turns == []


async def test_a_message_that_starts_nothing_is_invalid_params(
    stack: SystemStack, tmp_path: Path
) -> None:
    folder, erin = writer_folder(stack, tmp_path)
    no_text = {
        "message": {
            "messageId": "m-1",
            "role": "ROLE_USER",
            "parts": [{"data": {"approved": True, "call_id": "c-1"}}],
        }
    }
    not_a_message = {"message": "Write the note."}
    async with serving_agents(stack, folder, (erin,)) as served:
        without_text = await _error(served, erin, "SendMessage", no_text)
        unparsed = await _error(served, erin, "SendMessage", not_a_message)
        turns = await _turns_of(served, erin)

    assert without_text["code"] == INVALID_PARAMS
    assert "needs a text part" in without_text["message"]
    assert unparsed["code"] == INVALID_PARAMS
    assert turns == [], "a refused message started a turn"


async def test_someone_elses_task_or_context_is_not_found_and_nothing_is_decided(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, alice = writer_folder(stack, tmp_path)
    mallory = alice.replace("alice", "mallory")
    async with serving_agents(stack, folder, (alice,), (mallory,)) as served:
        async with a2a_client(served, alice, "writer") as client:
            waiting = last_task(await events(client, ask("Write the note.")))
        call = waiting_call(waiting)
        approve = answer(waiting, {"call_id": call["call_id"], "approved": True})
        async with a2a_client(served, mallory, "writer", streaming=False) as client:
            refused = []
            for attempt in (
                client.get_task(GetTaskRequest(id=waiting.id)),
                client.cancel_task(CancelTaskRequest(id=waiting.id)),
                events(client, approve),
                events(client, ask("Hello?", waiting.context_id)),
                client.get_task(GetTaskRequest(id=f"{waiting.id}x")),
            ):
                try:
                    await attempt
                except TaskNotFoundError as error:
                    refused.append(error.message)
        turn = turnkeeper.turn(await connect_like(served.worker, monkeypatch), waiting.id)
        status, decisions = await turn.status(), await turn.decisions()
        mallorys = await _turns_of(served, mallory)

    assert waiting.status.state == INPUT_REQUIRED
    assert len(refused) == 5, refused
    # Alike for someone else's task and one that does not exist: which ids exist never leaks.
    assert refused[0] == f"no task {waiting.id!r}"
    assert refused[4] == f"no task {waiting.id + 'x'!r}"
    assert [p.call_id for p in status.pending] == [call["call_id"]]
    assert status.state == "awaiting_approval" and decisions == [] and mallorys == []


async def test_a_decision_for_a_call_that_does_not_wait_decides_nothing(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, frank = writer_folder(stack, tmp_path)
    async with serving_agents(stack, folder, (frank,)) as served:
        async with a2a_client(served, frank, "writer", streaming=False) as client:
            waiting = last_task(await events(client, ask("Write the note.")))
            call = waiting_call(waiting)
            problems = []
            for request in (
                answer(waiting, {"call_id": "call-that-never-was", "approved": True}),
                answer(waiting, {"call_id": call["call_id"], "approved": "maybe"}),
                answer(waiting, {}, parts=[]),
                answer(waiting, {"call_id": call["call_id"], "approved": True, "approver": "x"}),
            ):
                try:
                    await events(client, request)
                except InvalidParamsError as error:
                    problems.append(error.message)
        turn = turnkeeper.turn(await connect_like(served.worker, monkeypatch), waiting.id)
        status, decisions = await turn.status(), await turn.decisions()

    assert len(problems) == 4, problems
    assert "no call 'call-that-never-was' waits" in problems[0]
    assert "approved" in problems[1]
    assert "one data part" in problems[2]
    assert "approver" in problems[3]  # who decides is the token's identity, never a field
    assert [p.call_id for p in status.pending] == [call["call_id"]]
    assert status.state == "awaiting_approval" and decisions == []
