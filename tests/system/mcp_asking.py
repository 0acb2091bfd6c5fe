"""What the tests of approvals over MCP share (docs/mcp-serve.md, Approvals over MCP): the
answers a client gives to an approval question, the call that waits as the HTTP API lists it,
and the reports of the turns a test's worker ran."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from mcp import Client
from mcp_types import ElicitRequestParams, ElicitResult
from turnkeeper.contracts.turn import AgentReport

import turnkeeper
from tests.support.waiting import until
from tests.system.conftest import SystemStack
from tests.system.driving import connect_like
from tests.system.mcp_serving import Era, Served, mcp_client, serving_agents

APPROVE = ElicitResult(action="accept", content={"approve": True, "reason": "fine"})
MALFORMED = ElicitResult(action="accept", content={"approve": "yes"})


def wire(answer: ElicitResult) -> dict[str, Any]:
    """An answer as a client sends it (`inputResponses` of a retry or of `tasks/update`)."""
    return answer.model_dump(by_alias=True, mode="json", exclude_none=True)


def answering(
    reply: ElicitResult, asked: list[ElicitRequestParams]
) -> Callable[[Any, ElicitRequestParams], Any]:
    """An elicitation callback that keeps what it was asked and answers `reply`."""

    async def callback(context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return reply

    return callback


async def waiting_call(served: Served, name: str) -> dict[str, Any]:
    """The one call waiting for approval that `name` may decide (`GET /v1/approvals`), once
    there."""
    headers = {"Authorization": f"Bearer {served.tokens[name]}"}
    async with httpx.AsyncClient(base_url=served.url, headers=headers, timeout=30) as http:

        async def waiting() -> list[dict[str, Any]]:
            return list((await http.get("/v1/approvals")).json())

        [call] = await until(waiting, bool, "a call to wait for approval")
        return call


async def reports(served: Served, monkeypatch: pytest.MonkeyPatch) -> dict[str, AgentReport]:
    """The reports of the turns on the served worker's queue (the dev server is the whole
    run's), by agent id, each once it has ended."""
    client = await connect_like(served.worker, monkeypatch)
    query = f"TaskQueue = '{served.worker.task_queue}'"
    found = [execution.id async for execution in client.list_workflows(query)]
    ended = [await turnkeeper.turn(client, workflow_id).result() for workflow_id in found]
    return {report.agent_id: report for report in ended}


@dataclass
class Asked:
    """A served folder, alice's client that answers every question with `reply`, and the
    questions it was asked."""

    served: Served
    client: Client
    questions: list[ElicitRequestParams] = field(default_factory=list)


@asynccontextmanager
async def answering_client(
    stack: SystemStack,
    folder: Path,
    era: Era,
    reply: ElicitResult,
    *identities: tuple[str, ...],
    tasks: bool = False,
) -> AsyncIterator[Asked]:
    """`serving_agents` for alice (and `identities`), and alice's client in `era` answering
    every approval question with `reply`."""
    questions: list[ElicitRequestParams] = []
    async with (
        serving_agents(stack, folder, ("alice",), *identities) as served,
        mcp_client(
            served.mcp_url,
            served.tokens["alice"],
            era,
            tasks=tasks,
            elicitation=answering(reply, questions),
        ) as client,
    ):
        yield Asked(served, client, questions)
