"""What the tests of served agents share (docs/mcp-serve.md): an agents folder whose agents
follow the fake model's scripts, `turnkeeper serve --agents` beside a worker, and the official
Python MCP client over HTTP in either era, signed in with a bearer token."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx2 as httpx
from mcp import Client
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp_types import (
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
    Request,
    RequestParams,
    Result,
)
from pydantic import ConfigDict

from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.driving import agent
from tests.system.serving import serving
from tests.system.test_http_api import add_token

MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
Era = Literal["legacy", "2026-07-28"]
ERAS: tuple[Era, ...] = ("legacy", MODERN)


def write_agent(folder: Path, key: str, agent_id: str, **fields: Any) -> Path:
    """An agent file in `folder` whose turns follow the fake's script `key`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{agent_id}.json"
    path.write_text(json.dumps({**agent(key, id=agent_id), **fields}))
    return path


@dataclass
class Served:
    """A worker, `turnkeeper serve --agents` for it, and a token per identity."""

    stack: SystemStack
    worker: WorkerProcess
    url: str
    tokens: dict[str, str]

    @property
    def mcp_url(self) -> str:
        return self.url + "/mcp"


@asynccontextmanager
async def serving_agents(
    stack: SystemStack, folder: Path, *identities: tuple[str, ...], log_name: str = "serve.log"
) -> AsyncIterator[Served]:
    """`turnkeeper serve --tokens tokens.json --agents FOLDER` for a new worker; `identities`
    are `tokens add` arguments (`("alice",)`, `("bob", "--tenant", "acme")`)."""
    worker = await stack.start_worker()
    tokens = {args[0]: await add_token(stack, worker, *args) for args in identities}
    async with serving(stack, worker, "--agents", str(folder), log_name=log_name) as url:
        yield Served(stack, worker, url, tokens)


def http_client(token: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=300))


@asynccontextmanager
async def mcp_client(
    url: str, token: str | None, era: Era, *, tasks: bool = False
) -> AsyncIterator[Client]:
    """The SDK's client of `url` in `era` (`legacy`: the 2025-11-25 handshake); with `tasks`,
    a 2026 client that names the tasks extension in its requests' capabilities."""
    extensions = [TasksClaim()] if tasks else None
    async with (
        http_client(token) as http,
        Client(
            streamable_http_client(url, http_client=http), mode=era, extensions=extensions
        ) as client,
    ):
        yield client


class CreatedTask(Result):
    """A 2026 `CreateTaskResult` (`resultType: "task"`), as the client parses it."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"]
    task_id: str
    status: str


async def _unresolved(result: CreatedTask, context: Any) -> CallToolResult:
    raise AssertionError("the tests read created tasks with allow_claimed=True")


class TasksClaim(ClientExtension):
    """The client side of `io.modelcontextprotocol/tasks`: advertised in every request, and
    `resultType: "task"` parsed as a `CreatedTask`."""

    identifier = TASKS

    def result_claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=_unresolved)]


class TaskParams(RequestParams):
    task_id: str


class TaskRequest(Request[TaskParams, str]):
    """`tasks/get`, `tasks/result`, `tasks/cancel`: one shape, the method named per call (the
    SDK has no task requests of its own)."""


async def task_request(client: Client, method: str, task_id: str) -> dict[str, Any]:
    """`method` for `task_id`; the result as sent (a `ValueError` for an MCP error)."""
    request = TaskRequest(method=method, params=TaskParams(task_id=task_id))
    result = await client.session.send_request(request, _Raw)
    return result.model_dump(by_alias=True, mode="json")


class _Raw(Result):
    model_config = ConfigDict(extra="allow")


async def legacy_task_call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A 2025-11-25 task-augmented `tools/call`: the `CreateTaskResult` as sent.

    Through the dispatcher: the SDK's `send_request` checks every `tools/call` result against
    `CallToolResult`, which a `CreateTaskResult` is not."""
    params = CallToolRequestParams(name=name, arguments=arguments, task={"ttl": 60_000})
    data = CallToolRequest(params=params).model_dump(by_alias=True, mode="json", exclude_none=True)
    dispatcher = client.session._dispatcher
    return await dispatcher.send_raw_request("tools/call", data["params"], {})
