"""`POST /v1/agents/{agent_id}/events` (turnkeeper/http/agent_events.py) and
`turnkeeper.signal_event`, in-process over the app on the dev server with a real worker: an event
starts the turn of its key once however often it is delivered, wakes the agent that waits for
it, belongs to its starter, and a bad body starts nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from temporalio.service import RPCError
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import QUERY_STATUS
from turnkeeper.contracts.search_attributes import STARTED_BY
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentReport
from turnkeeper.contracts.waits import event_workflow_id

import turnkeeper
from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from turnkeeper.client.errors import InvalidTurnRequest
from turnkeeper.http.app import create_app
from turnkeeper.http.conversations import Conversations
from turnkeeper.http.mcp.agents import load_agents
from turnkeeper.http.tokens import TokenStore
from turnkeeper.http.turns import TurnService


class Api:
    def __init__(
        self, http: httpx2.AsyncClient, tokens: dict[str, str], turns: TurnRunner, script: str
    ) -> None:
        self.http, self.tokens, self.turns, self.script = http, tokens, turns, script

    async def event(self, who: str, agent: str = "deployer", **body: Any) -> httpx2.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return await self.http.post(f"/v1/agents/{agent}/events", json=body, headers=headers)


@pytest.fixture
async def api(turns: TurnRunner, tmp_path: Path) -> AsyncIterator[Api]:
    key = new_key()
    agent = scripted_request(key)["agent"] | {"id": "deployer", "tools": ["wait"]}
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "deployer.json").write_text(json.dumps(agent))
    store = TokenStore(tmp_path / "tokens.json")
    tokens = {name: store.add(name) for name in ("ada", "bob")}
    conversations = Conversations(turns.client, load_agents(tmp_path / "agents"), turns.task_queue)
    app = create_app(TurnService(turns.client), store, conversations=conversations)
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://test") as http:
        yield Api(http, tokens, turns, key)


def deploy_event(deploy: str, delivery: str, **payload: Any) -> dict[str, Any]:
    return {
        "key": deploy,
        "event": "deploy-finished",
        "idempotency_id": delivery,
        "payload": payload,
    }


async def test_an_event_delivered_twice_starts_one_turn_which_waits_for_the_next(api: Api) -> None:
    script = api.script
    api.turns.fake.script(
        script,
        [
            fake.tool_calls(("wait", {"event": "deploy-finished", "reason": "the prod deploy"})),
            fake.text("Release notes for 1.4.2 written."),
        ],
    )
    deploy = f"deploy-{new_key()}"
    started = await api.event("ada", **deploy_event(deploy, "d-1", stage="staging"))
    retried = await api.event("ada", **deploy_event(deploy, "d-1", stage="staging"))
    workflow_id = event_workflow_id("deployer", deploy)
    assert started.status_code == 202, started.text
    assert started.json() == {"turn_id": workflow_id, "started": True, "duplicate": False}
    assert retried.json() == {"turn_id": workflow_id, "started": False, "duplicate": False}

    handle = api.turns.client.get_workflow_handle(workflow_id, result_type=AgentReport)
    await until(
        lambda: handle.query(QUERY_STATUS, result_type=TurnStatus),
        lambda status: status.state == "waiting",
        "the turn waiting for the deploy",
    )
    # Someone else's turn of a key is no turn: Bob's event neither reaches it nor starts one.
    hijack = await api.event("bob", **deploy_event(deploy, "d-bob", stage="prod"))
    assert hijack.status_code == 404, hijack.text
    woke = await api.event("ada", **deploy_event(deploy, "d-2", stage="prod", version="1.4.2"))
    assert woke.json()["started"] is False
    report = await handle.result()

    # The starting event is the task; the wait read the second one, not the first again.
    first_call = api.turns.fake.requests_for(script)[0].body["messages"][0]
    assert "'deploy-finished'" in json.dumps(first_call) and "staging" in json.dumps(first_call)
    [result] = [b for m in report.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert json.loads(result.text())["payload"] == {"stage": "prod", "version": "1.4.2"}
    assert report.started_by == "ada"
    described = await handle.describe()
    assert described.typed_search_attributes.get(STARTED_BY) == "ada"
    # A retry of the starting event after the turn ended starts nothing either.
    late = await api.event("ada", **deploy_event(deploy, "d-1", stage="staging"))
    assert late.json() == {"turn_id": workflow_id, "started": False, "duplicate": True}
    assert len(api.turns.fake.requests_for(script)) == 2


async def test_bad_events_are_refused_and_start_nothing(api: Api) -> None:
    deploy = f"bad-{new_key()}"
    cases = {
        "unknown agent": ({"agent": "nobody", **deploy_event(deploy, "x")}, 404),
        "no idempotency id": ({"key": deploy, "event": "deploy-finished"}, 422),
        "key with a slash": (deploy_event("a/b", "x"), 422),
        "bad event name": ({**deploy_event(deploy, "x"), "event": "has space"}, 422),
        "unknown field": ({**deploy_event(deploy, "x"), "started_by": "bob"}, 422),
    }
    for name, (body, status) in cases.items():
        answer = await api.event("ada", **body)
        assert answer.status_code == status, (name, answer.text)
    with pytest.raises(RPCError):
        await api.turns.client.get_workflow_handle(event_workflow_id("deployer", deploy)).describe()


async def test_a_caller_cannot_start_a_turn_at_an_event_id(turns: TurnRunner) -> None:
    with pytest.raises(InvalidTurnRequest, match="the turns events start"):
        await turnkeeper.start_turn(
            turns.client,
            agent={"id": "a", "model": "demo:x"},
            task={"id": "t", "input": "x"},
            id="event:a:mine",
            task_queue=turns.task_queue,
        )
