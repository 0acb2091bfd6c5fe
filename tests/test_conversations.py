"""`Conversations` (turnkeeper/http/conversations.py), which the chat protocols of `turnkeeper
serve --agents` continue, on the dev server with a real worker: a conversation is a session its
starter owns, whose turns carry the starter's `StartedBy`; someone else's is refused like a
missing one, and nothing is started for a refused request."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from temporalio.service import RPCError
from turnkeeper.contracts.search_attributes import STARTED_BY

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from turnkeeper.client.errors import InvalidSessionRequest
from turnkeeper.client.sessions import start_session
from turnkeeper.http.access import visible_turn
from turnkeeper.http.conversations import Conversations, conversation_workflow_id
from turnkeeper.http.errors import ApiError
from turnkeeper.http.mcp.agents import load_agents
from turnkeeper.http.tokens import Identity
from turnkeeper.http.turns import TurnService

ADA = Identity(name="ada", token_sha256="a" * 64, role="member")
BOB = Identity(name="bob", token_sha256="b" * 64, role="member")


def served(turns: TurnRunner, tmp_path: Path, key: str) -> Conversations:
    agent = scripted_request(key)["agent"] | {"id": "helper"}
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "helper.json").write_text(json.dumps(agent))
    return Conversations(turns.client, load_agents(tmp_path / "agents"), turns.task_queue)


async def test_a_conversation_is_its_starters_and_so_are_its_turns(
    turns: TurnRunner, tmp_path: Path
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("Hello, Ada."), fake.text("Still here.")])
    conversations = served(turns, tmp_path, key)
    chat = f"chat-{key}"

    first = await conversations.send(ADA, "helper", chat, "My name is Ada.")
    assert first == f"conversation:helper:{chat}/turn-1"
    assert (await turns.client.get_workflow_handle(first).result())["output"] == "Hello, Ada."
    started = await turns.client.get_workflow_handle(first).describe()
    assert started.typed_search_attributes.get(STARTED_BY) == "ada"
    # The API's own access rules see the turn as Ada's: hers to read and decide, not Bob's.
    service = TurnService(turns.client)
    seen = await visible_turn(service, first, ADA)
    assert (seen.started_by, seen.request.agent.stream) == ("ada", True)
    with pytest.raises(ApiError) as hidden:
        await visible_turn(service, first, BOB)
    assert hidden.value.status == 404

    second = await conversations.send(ADA, "helper", chat, "Are you there?")
    assert second.endswith("/turn-2")
    assert await conversations.last_turn(ADA, "helper", chat) == second
    await turns.client.get_workflow_handle(second).result()
    assert len(turns.fake.requests_for(key)) == 2


async def test_someone_elses_conversation_is_no_conversation(
    turns: TurnRunner, tmp_path: Path
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("Hello.")])
    conversations = served(turns, tmp_path, key)
    chat = f"chat-{key}"
    first = await conversations.send(ADA, "helper", chat, "Hi.")
    await turns.client.get_workflow_handle(first).result()

    for read in (conversations.running_turn, conversations.last_turn):
        with pytest.raises(ApiError) as refused:
            await read(BOB, "helper", chat)
        assert refused.value.status == 404
    with pytest.raises(ApiError) as refused:
        await conversations.send(BOB, "helper", chat, "Hijack.")
    assert refused.value.status == 404
    missing = await _refusal(conversations.last_turn(ADA, "helper", f"none-{key}"))
    assert (refused.value.status, missing.status) == (404, 404)
    # Bob's message started nothing: the conversation still has Ada's one turn.
    assert await conversations.last_turn(ADA, "helper", chat) == first
    assert len(turns.fake.requests_for(key)) == 1


async def test_bad_requests_start_nothing(turns: TurnRunner, tmp_path: Path) -> None:
    key = new_key()
    conversations = served(turns, tmp_path, key)
    cases = {
        "unknown agent": ("nobody", f"c-{key}", "hi", 404, "served: helper"),
        "bad id": ("helper", "a b/c", "hi", 422, "letters, digits"),
        "empty id": ("helper", "", "hi", 422, "at least one"),
        "long id": ("helper", "x" * 200, "hi", 422, "at most"),
        "empty message": ("helper", f"e-{key}", "  ", 422, "empty"),
    }
    for name, (agent, chat, text, status, words) in cases.items():
        refused = await _refusal(conversations.send(ADA, agent, chat, text))
        assert (refused.status, words in refused.message) == (status, True), name
    with pytest.raises(RPCError):  # the empty message's conversation was never started
        await turns.client.get_workflow_handle(
            conversation_workflow_id("helper", f"e-{key}")
        ).describe()


async def test_a_priced_agent_is_an_operators_to_start(turns: TurnRunner, tmp_path: Path) -> None:
    agent = scripted_request(new_key())["agent"] | {
        "id": "priced",
        "price": {"input_per_mtok": 1.0, "output_per_mtok": 1.0},
    }
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "priced.json").write_text(json.dumps(agent))
    conversations = Conversations(turns.client, load_agents(tmp_path / "agents"), turns.task_queue)
    chat = f"p-{uuid.uuid4().hex[:8]}"
    refused = await _refusal(conversations.send(ADA, "priced", chat, "hi"))
    assert refused.status == 403
    with pytest.raises(RPCError):
        await turns.client.get_workflow_handle(conversation_workflow_id("priced", chat)).describe()


async def test_a_caller_cannot_take_a_conversations_id(turns: TurnRunner) -> None:
    with pytest.raises(InvalidSessionRequest, match="served agents' conversations"):
        await start_session(
            turns.client,
            session_id="conversation:helper:mine",
            agent={"id": "a", "model": "demo:x"},
            task_queue=turns.task_queue,
        )


async def _refusal(pending: object) -> ApiError:
    try:
        await pending  # type: ignore[misc]
    except ApiError as error:
        return error
    raise AssertionError("not refused")
