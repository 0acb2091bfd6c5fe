"""What the tests of served agents share (docs/mcp-serve.md): an agents folder whose agents
follow the fake model's scripts, `turnkeeper serve --agents` beside a worker, and the official
Python MCP client over HTTP in either era, signed in with a bearer token."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx2 as httpx
from mcp import Client
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.client.session import ElicitationFnT
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

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.driving import agent
from tests.system.serving import serving
from turnkeeper.http.tokens import MEMBER, TokenStore

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
    stack: SystemStack,
    folder: Path,
    *identities: tuple[str, ...],
    log_name: str = "serve.log",
    options: tuple[str, ...] = (),
) -> AsyncIterator[Served]:
    """`turnkeeper serve --tokens tokens.json --agents FOLDER [options]` for a new worker;
    `identities` are `tokens add` arguments (`("alice",)`, `("bob", "--tenant", "acme")`)."""
    worker = await stack.start_worker()
    tokens = {args[0]: stored_token(stack, *args) for args in identities}
    serve_options = ("--agents", str(folder), *options)
    async with serving(stack, worker, *serve_options, log_name=log_name) as url:
        yield Served(stack, worker, url, tokens)


def stored_token(stack: SystemStack, name: str, *options: str) -> str:
    """A token for `name` in the stack's token file, as `turnkeeper tokens add NAME --file
    tokens.json [--role R] [--tenant T]` writes it, without starting that command (its own
    tests run it): every served test would otherwise pay a Python start per identity."""
    given = dict(zip(options[::2], options[1::2], strict=True))
    unknown = set(given) - {"--role", "--tenant"}
    assert not unknown, f"options the in-process token does not take: {unknown}"
    store = TokenStore(stack.tmp_path / "tokens.json")
    return store.add(name, role=given.get("--role", MEMBER), tenant=given.get("--tenant"))


def http_client(token: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=300))


@asynccontextmanager
async def mcp_client(
    url: str,
    token: str | None,
    era: Era,
    *,
    tasks: bool = False,
    elicitation: ElicitationFnT | None = None,
) -> AsyncIterator[Client]:
    """The SDK's client of `url` in `era` (`legacy`: the 2025-11-25 handshake); with `tasks`,
    a 2026 client that names the tasks extension in its requests' capabilities; with
    `elicitation`, one that answers the server's questions with it."""
    extensions = [TasksClaim()] if tasks else None
    # 2026: as a client meets a server it does not know, `server/discover` first.
    mode = "legacy" if era == "legacy" else "auto"
    async with (
        http_client(token) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode=mode,
            extensions=extensions,
            elicitation_callback=elicitation,
        ) as client,
    ):
        assert (client.protocol_version == MODERN) == (era == MODERN), client.protocol_version
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

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=_unresolved)]


class _Params(RequestParams):
    model_config = ConfigDict(extra="allow")


class TaskRequest(Request[_Params, str]):
    """`tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`: one shape, the method named
    per call (the SDK has no task requests of its own)."""


class _Raw(Result):
    model_config = ConfigDict(extra="allow")


async def task_request(client: Client, method: str, **params: Any) -> dict[str, Any]:
    """`method` with `params` (wire names: `taskId`); the result as sent (an MCP error raises
    `MCPError`)."""
    request = TaskRequest(method=method, params=_Params.model_validate(params))
    result = await client.session.send_request(request, _Raw)
    return result.model_dump(by_alias=True, mode="json")


async def legacy_task_call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A 2025-11-25 task-augmented `tools/call`: the `CreateTaskResult` as sent.

    Through the dispatcher: the SDK's `send_request` checks every `tools/call` result against
    `CallToolResult`, which a `CreateTaskResult` is not."""
    params = CallToolRequestParams(name=name, arguments=arguments, task={"ttl": 60_000})
    data = CallToolRequest(params=params).model_dump(by_alias=True, mode="json", exclude_none=True)
    dispatcher = client.session._dispatcher
    return await dispatcher.send_raw_request("tools/call", data["params"], {})


def approval_agent(
    stack: SystemStack, folder: Path, key: str, agent_id: str, **fields: Any
) -> Path:
    """An agent that writes `out.md`, a call that waits for approval, then answers "Done."
    (`fields`: more of the agent file, its `approvers` say)."""
    write = fake.tool_calls(("write_file", {"path": "out.md", "content": "hi"}))
    stack.fake.script(key, [write, fake.text("Done.")])
    constraints = {"require_approval": ["write_file"]}
    return write_agent(
        folder, key, agent_id, tools=["write_file"], constraints=constraints, **fields
    )


async def polled(
    client: Client, task_id: str, done: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    """`tasks/get` until `done` holds of its answer."""
    return await until(lambda: task_request(client, "tasks/get", taskId=task_id), done, what)


async def approve_over_http(served: Served, name: str, workflow_id: str) -> None:
    """Approves the turn's waiting call as `name`, through the HTTP API."""
    headers = {"Authorization": f"Bearer {served.tokens[name]}"}
    async with httpx.AsyncClient(base_url=served.url, headers=headers, timeout=30) as http:
        status = (await http.get(f"/v1/turns/{workflow_id}")).json()
        [call] = status["pending"]
        body = {"call_id": call["call_id"], "approved": True}
        decided = await http.post(f"/v1/turns/{workflow_id}/decisions", json=body)
        assert decided.status_code == 200, decided.text


@asynccontextmanager
async def served_client(
    stack: SystemStack, folder: Path, name: str, era: Era, *, tasks: bool = False
) -> AsyncIterator[tuple[Served, Client]]:
    """`serving_agents` for the identity `name`, and its client in `era`."""
    async with (
        serving_agents(stack, folder, (name,)) as served,
        mcp_client(served.mcp_url, served.tokens[name], era, tasks=tasks) as client,
    ):
        yield served, client


def writer_folder(stack: SystemStack, tmp_path: Path) -> tuple[Path, str]:
    """An agents folder holding `writer` (`approval_agent`), and a caller's name of the test's
    own (the dev server holds every test's turns)."""
    key = new_key()
    folder = tmp_path / "agents"
    approval_agent(stack, folder, key, "writer")
    return folder, f"alice-{key}"


def audit_lines(stack: SystemStack, action: str) -> list[dict[str, Any]]:
    """The audit lines (`api_call`) of `action` in the log of `turnkeeper serve`."""
    lines = (stack.tmp_path / "serve.log").read_text().splitlines()
    audited = [json.loads(line) for line in lines if '"api_call"' in line]
    return [line for line in audited if line["action"] == action]
