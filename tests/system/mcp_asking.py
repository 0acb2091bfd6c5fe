"""What the tests of approvals over MCP share (docs/mcp-serve.md, Approvals over MCP): an agent
whose turn writes a file and waits for approval first, the elicitation answers a client gives,
and the turn's waiting call and decisions as the HTTP API shows them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from mcp import Client
from mcp_types import ElicitRequestParams, ElicitResult, Request, Result
from pydantic import ConfigDict
from turnkeeper.contracts.turn import AgentReport

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from tests.system.conftest import SystemStack
from tests.system.driving import connect_like
from tests.system.mcp_serving import Served, TaskParams, write_agent

APPROVE = ElicitResult(action="accept", content={"approve": True, "reason": "fine"})
MALFORMED = ElicitResult(action="accept", content={"approve": "yes"})


def writing_agent(stack: SystemStack, folder: Path, agent_id: str, **fields: Any) -> str:
    """An agent file whose turn writes `notes.md` (its `write_file` waits for approval), then
    answers "Written."; the fake's script key."""
    key = new_key()
    write = fake.tool_calls(("write_file", {"path": "notes.md", "content": "hello"}))
    stack.fake.script(key, [write, fake.text("Written.")])
    constraints = {"require_approval": ["write_file"]}
    write_agent(folder, key, agent_id, tools=["write_file"], constraints=constraints, **fields)
    return key


def answering(
    reply: ElicitResult, asked: list[ElicitRequestParams]
) -> Callable[[Any, ElicitRequestParams], Any]:
    """An elicitation callback that keeps what it was asked and answers `reply`."""

    async def callback(context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return reply

    return callback


def headers(served: Served, name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {served.tokens[name]}"}


async def waiting_call(served: Served, name: str) -> dict[str, Any]:
    """The one call waiting for approval that `name` sees in `GET /v1/approvals`, once there."""
    async with httpx.AsyncClient(base_url=served.url, headers=headers(served, name)) as http:

        async def waiting() -> list[dict[str, Any]]:
            return list((await http.get("/v1/approvals")).json())

        [call] = await until(waiting, bool, "a call to wait for approval")
        return call


async def decide_over_http(
    served: Served, name: str, workflow_id: str, call_id: str, approved: bool = True
) -> None:
    """`POST /v1/turns/{id}/decisions` as `name`."""
    async with httpx.AsyncClient(base_url=served.url, headers=headers(served, name)) as http:
        answer = await http.post(
            f"/v1/turns/{workflow_id}/decisions",
            json={"call_id": call_id, "approved": approved, "reason": "from the inbox"},
        )
        assert answer.status_code == 200, answer.text


async def reports(served: Served, monkeypatch: pytest.MonkeyPatch) -> dict[str, AgentReport]:
    """The reports of the turns on the served worker's queue (the dev server is the whole
    run's), by agent id, each once it has ended."""
    client = await connect_like(served.worker, monkeypatch)
    query = f"TaskQueue = '{served.worker.task_queue}'"
    found = [execution.id async for execution in client.list_workflows(query)]
    ended = [await turnkeeper.turn(client, workflow_id).result() for workflow_id in found]
    return {report.agent_id: report for report in ended}


class UpdateParams(TaskParams):
    """`tasks/update`'s params: the task, and the answers to its `inputRequests`."""

    input_responses: dict[str, Any]


class UpdateRequest(Request[UpdateParams, str]):
    """`tasks/update` (its params typed as its own: pydantic dumps a field by its declared
    type, and `TaskRequest`'s would drop `inputResponses`)."""


class Acknowledged(Result):
    """`tasks/update`'s (empty) result, as sent."""

    model_config = ConfigDict(extra="allow")


async def update_task(client: Client, task_id: str, responses: dict[str, Any]) -> dict[str, Any]:
    """`tasks/update` with `responses` as `inputResponses`; its result as sent (an `MCPError`
    for a refusal)."""
    params = UpdateParams(task_id=task_id, input_responses=responses)
    result = await client.session.send_request(
        UpdateRequest(method="tasks/update", params=params), Acknowledged
    )
    return dict(result.model_dump(by_alias=True, mode="json", exclude_none=True))
