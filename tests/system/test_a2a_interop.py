"""Served agents driven by a client nobody here wrote (docs/a2a.md): the official A2A
JavaScript SDK's client (`tests/interop/a2a_client.mjs`, `@a2a-js/sdk`), a Node process of its
own, against `turnkeeper serve --agents DIR` beside `python worker.py`: the card from the
agent's URL, a streamed message whose turn waits for approval, the decision, `tasks/get`, and a
blocking message cancelled with `tasks/cancel`."""

from __future__ import annotations

from pathlib import Path

import pytest

import turnkeeper
from tests.conftest import new_key
from tests.support.interop import INTEROP, node
from tests.system.a2a_serving import agent_url
from tests.system.conftest import SystemStack
from tests.system.driving import connect_like
from tests.system.mcp_serving import approval_agent, serving_agents
from tests.system.test_mcp_interop import run_node

CLIENT_SCRIPT = INTEROP / "a2a_client.mjs"


# Two Node processes, each loading the SDK and reading the card, after a serve process starts.
@pytest.mark.timeout(240)
async def test_the_javascript_sdk_streams_asks_decides_and_cancels(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "agents"
    approval_agent(stack, folder, new_key(), "writer", stream=True)
    approval_agent(stack, folder, new_key(), "stopper")
    grace = f"grace-{new_key()}"
    async with serving_agents(stack, folder, (grace,)) as served:
        token = served.tokens[grace]

        async def flow(agent_id: str, name: str) -> dict:
            # With its trailing slash: the SDK resolves the card's path relative to it.
            url = agent_url(served, agent_id) + "/"
            return await run_node(
                node(), CLIENT_SCRIPT, "--url", url, "--token", token, "--flow", name
            )

        approved = await flow("writer", "approve")
        cancelled = await flow("stopper", "cancel")
        client = await connect_like(served.worker, monkeypatch)
        written = await turnkeeper.turn(client, approved["asked"]["taskId"]).result()
        stopped = await turnkeeper.turn(client, cancelled["sent"]["taskId"]).result()

    assert approved["card"] == {"name": "writer", "streaming": True}
    asked, decided = approved["asked"], approved["decided"]
    assert asked["states"] == ["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"]
    assert decided["states"][-1] == "TASK_STATE_COMPLETED" and decided["text"] == "Done."
    assert approved["got"] == {"state": "TASK_STATE_COMPLETED", "contextId": asked["contextId"]}
    assert [(d.call_id, d.approver) for d in written.decisions] == [(asked["callId"], grace)]
    assert cancelled["sent"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert cancelled["cancelled"]["state"] == "TASK_STATE_CANCELED"
    assert stopped.outcome == "interrupted"
    missing = f"{cancelled['sent']['taskId']}-missing"
    assert cancelled["missing"] == {
        "name": "JsonRpcTaskNotFoundError",
        "message": f"no task {missing!r}",
    }
