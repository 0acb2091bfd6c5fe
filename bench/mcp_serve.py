"""Served agents' cost (docs/mcp-serve.md): the time from a task-augmented `tools/call` to its
`taskId`, in both protocol eras, and a plain served call's time against `POST /v1/turns`
followed to the same turn's end on `GET /v1/turns/{id}/events`.

    .venv/bin/python -m bench.mcp_serve [--turns 20] [--out FILE]

`--out` writes the figures (`FIGURES`) as JSON.

One process: a fresh dev server (`BenchServer`), `python worker.py` against it as its own
process, `turnkeeper serve`'s app (the API and `/mcp` of an agents folder, as `serve --agents`
puts them together) on uvicorn in this process on a free port, and the suite's fake Anthropic
server answering every turn with one short text (each turn its own script). The official Python
MCP client holds one session per era for the whole run; the API side one HTTP client. The plain
call and the API turn alternate which goes first, so that load on the machine meets both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import httpx2 as httpx
import uvicorn
from mcp import Client
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolRequest, CallToolRequestParams, Result
from pydantic import ConfigDict
from temporalio.client import Client as TemporalClient
from turnkeeper.contracts.names import TASK_QUEUE_ENV

import turnkeeper
from bench.server import BenchServer, free_port
from tests.fakes import fake_anthropic as anthropic
from tests.fakes.fake_anthropic import FakeAnthropic, start_fake_anthropic
from turnkeeper.http.app import create_app
from turnkeeper.http.auth import FailedSignIns
from turnkeeper.http.mcp import McpEndpoint, load_agents, served, with_mcp
from turnkeeper.http.tokens import TokenStore
from turnkeeper.http.turns import TurnService

ROOT = Path(__file__).resolve().parents[1]
FIGURES = (
    "task_id_ms_median_2025",
    "task_id_ms_p95_2025",
    "task_id_ms_median_2026",
    "task_id_ms_p95_2026",
    "api_turn_ms_median",
    "api_events_ms_median",
    "mcp_call_ms_median",
    "mcp_over_api",
)
IDENTITY = "alice"
AGENT_ID = "bench-mcp"
MODEL = "anthropic:claude-sonnet-4-6"
MODERN = "2026-07-28"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


class _Run:
    """The stack of one run: the fake model, the API's HTTP client, and an MCP session per
    era."""

    def __init__(
        self,
        fake: FakeAnthropic,
        http: httpx.AsyncClient,
        mcp: dict[str, Client],
        temporal: TemporalClient,
    ) -> None:
        self.fake = fake
        self.http = http
        self.mcp = mcp
        self.temporal = temporal

    def task(self, label: str) -> str:
        """A task whose turn answers at once, on a script of its own."""
        key = f"{label}-{uuid.uuid4().hex[:10]}"
        self.fake.script(key, [anthropic.text("Done.")])
        return f"Say done. [script:{key}]"

    async def _post_turn(self) -> str:
        body = {
            "agent": {"id": AGENT_ID, "model": MODEL},
            "task": {"id": "bench", "input": self.task("api")},
        }
        started = await self.http.post("/v1/turns", json=body)
        started.raise_for_status()
        return str(started.json()["workflow_id"])

    async def api_turn(self) -> float:
        """ms from `POST /v1/turns` to the turn's result, awaited as the served call awaits it
        (the workflow's result): the same turn, the same end, without MCP."""
        began = time.perf_counter()
        workflow_id = await self._post_turn()
        await turnkeeper.turn(self.temporal, workflow_id).result()
        return (time.perf_counter() - began) * 1000

    async def api_events(self) -> float:
        """ms from `POST /v1/turns` to `turn_finished` on the turn's event stream, as an HTTP
        client without a Temporal client follows it."""
        began = time.perf_counter()
        workflow_id = await self._post_turn()
        async with self.http.stream("GET", f"/v1/turns/{workflow_id}/events") as stream:
            async for line in stream.aiter_lines():
                if line.startswith("data: ") and json.loads(line[6:])["kind"] == "turn_finished":
                    break
        return (time.perf_counter() - began) * 1000

    async def mcp_call(self) -> float:
        """ms of a plain `tools/call` (2025-11-25), which answers at the turn's end."""
        began = time.perf_counter()
        result = await self.mcp["legacy"].call_tool(AGENT_ID, {"task": self.task("mcp")})
        assert not result.is_error, result
        return (time.perf_counter() - began) * 1000

    async def task_id_2025(self) -> float:
        """ms from a task-augmented `tools/call` (2025-11-25) to its `CreateTaskResult`."""
        params = CallToolRequestParams(
            name=AGENT_ID, arguments={"task": self.task("t25")}, task={"ttl": 60_000}
        )
        wire = CallToolRequest(params=params).model_dump(by_alias=True, mode="json")
        # Through the dispatcher: the SDK checks a `tools/call` result as a `CallToolResult`.
        dispatcher = self.mcp["legacy"].session._dispatcher
        began = time.perf_counter()
        created = await dispatcher.send_raw_request("tools/call", wire["params"], {})
        elapsed = (time.perf_counter() - began) * 1000
        assert created["task"]["taskId"].startswith("mcp-"), created
        return elapsed

    async def task_id_2026(self) -> float:
        """ms from a `tools/call` of a client that takes tasks (2026-07-28) to its task."""
        began = time.perf_counter()
        created = await self.mcp[MODERN].session.call_tool(
            AGENT_ID, {"task": self.task("t26")}, allow_claimed=True
        )
        elapsed = (time.perf_counter() - began) * 1000
        assert created.model_dump(by_alias=True)["resultType"] == "task", created
        return elapsed


async def _timed(count: int, *sides: Callable[[], Awaitable[float]]) -> list[list[float]]:
    """`count` rounds of every side, the order turned each round; ms per side."""
    figures: list[list[float]] = [[] for _ in sides]
    for round_ in range(count):
        order = list(enumerate(sides))
        if round_ % 2:
            order.reverse()
        for index, side in order:
            figures[index].append(await side())
    return figures


async def measure(run: _Run, turns: int) -> dict[str, Any]:
    sides = (run.api_turn, run.api_events, run.mcp_call, run.task_id_2025, run.task_id_2026)
    await _timed(2, *sides)  # warm-up: connections, the worker's first activations
    api, events, mcp = await _timed(turns, run.api_turn, run.api_events, run.mcp_call)
    legacy, modern = await _timed(turns, run.task_id_2025, run.task_id_2026)
    api_median, mcp_median = statistics.median(api), statistics.median(mcp)
    return {
        "turns": turns,
        "task_id_ms_median_2025": statistics.median(legacy),
        "task_id_ms_p95_2025": _percentile(legacy, 0.95),
        "task_id_ms_median_2026": statistics.median(modern),
        "task_id_ms_p95_2026": _percentile(modern, 0.95),
        "api_turn_ms_median": api_median,
        "api_events_ms_median": statistics.median(events),
        "mcp_call_ms_median": mcp_median,
        "mcp_over_api": mcp_median / api_median,
    }


@asynccontextmanager
async def _serving(server: BenchServer, folder: Path) -> AsyncIterator[tuple[str, str]]:
    """`turnkeeper serve --agents FOLDER`'s app on uvicorn here: its URL and alice's token."""
    client = await turnkeeper.connect(address=server.address)
    tokens = TokenStore(server.folder / "tokens.json")
    token = tokens.add(IDENTITY)
    turns, failures = TurnService(client), FailedSignIns()
    endpoint = McpEndpoint(served(load_agents(folder), turns), tokens, failures)
    app = with_mcp(create_app(turns, tokens, failures=failures), endpoint)
    port = free_port()
    api = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning"))
    async with endpoint.run():
        serving = asyncio.create_task(api.serve())
        try:
            while not api.started:  # noqa: ASYNC110  (uvicorn says it has started with a flag only)
                await asyncio.sleep(0.05)
            yield f"http://127.0.0.1:{port}", token
        finally:
            api.should_exit = True
            await serving


async def _clients(
    url: str, token: str, fake: FakeAnthropic, address: str, stack: AsyncExitStack
) -> _Run:
    """The API's HTTP client, an MCP session per era, and a Temporal client of our own."""
    headers = {"Authorization": f"Bearer {token}"}
    timeout = httpx.Timeout(30, read=300)
    http = await stack.enter_async_context(
        httpx.AsyncClient(base_url=url, headers=headers, timeout=timeout)
    )
    sessions: dict[str, Client] = {}
    for era in ("legacy", MODERN):
        mcp_http = await stack.enter_async_context(
            httpx.AsyncClient(headers=headers, timeout=timeout)
        )
        extensions = [_TasksClaim()] if era == MODERN else None
        sessions[era] = await stack.enter_async_context(
            Client(
                streamable_http_client(f"{url}/mcp", http_client=mcp_http),
                mode=era,
                extensions=extensions,
            )
        )
    return _Run(fake, http, sessions, await turnkeeper.connect(address=address))


class _CreatedTask(Result):
    """A 2026-07-28 `resultType: "task"` answer, as the client parses it."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"]


async def _unresolved(result: _CreatedTask, context: Any) -> Any:
    raise AssertionError("the bench reads created tasks with allow_claimed=True")


class _TasksClaim(ClientExtension):
    """The client side of `io.modelcontextprotocol/tasks`: advertised in every request."""

    identifier = TASKS_EXTENSION

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=_CreatedTask, resolve=_unresolved)]


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    server = BenchServer()
    try:
        async with server, start_fake_anthropic() as fake:
            queue = f"bench-mcp-{uuid.uuid4().hex[:6]}"
            folder = server.folder / "agents"
            folder.mkdir()
            agent = {"id": AGENT_ID, "model": MODEL, "description": "Answers at once."}
            (folder / f"{AGENT_ID}.json").write_text(json.dumps(agent))
            worker = await asyncio.create_subprocess_exec(
                sys.executable, str(ROOT / "worker.py"), "--address", server.address,
                "--task-queue", queue,
                env={"PATH": "/usr/bin:/bin", "ANTHROPIC_BASE_URL": fake.base_url,
                     "ANTHROPIC_API_KEY": "bench", "AGENT_WORKSPACE": str(server.folder),
                     "TURNKEEPER_DATA_DIR": str(server.folder / "data")},
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            try:
                return await _measured(args, server, folder, fake, queue)
            finally:
                worker.terminate()
                await worker.wait()
    finally:
        shutil.rmtree(server.folder, ignore_errors=True)


async def _measured(
    args: argparse.Namespace, server: BenchServer, folder: Path, fake: FakeAnthropic, queue: str
) -> dict[str, Any]:
    # `serve` starts turns on the queue its variables name: the worker's.
    os.environ[TASK_QUEUE_ENV] = queue
    async with _serving(server, folder) as (url, token), AsyncExitStack() as stack:
        run = await _clients(url, token, fake, server.address, stack)
        return await measure(run, args.turns)


def _table(figures: dict[str, Any]) -> str:
    rows = [
        ("task-augmented call → taskId, 2025-11-25, median / p95",
         f"{figures['task_id_ms_median_2025']:.1f} / {figures['task_id_ms_p95_2025']:.1f} ms"),
        ("task-augmented call → task, 2026-07-28, median / p95",
         f"{figures['task_id_ms_median_2026']:.1f} / {figures['task_id_ms_p95_2026']:.1f} ms"),
        ("`POST /v1/turns` → the turn's result (awaited as the served call does), median",
         f"{figures['api_turn_ms_median']:.1f} ms"),
        ("`POST /v1/turns` → `turn_finished` on its event stream, median",
         f"{figures['api_events_ms_median']:.1f} ms"),
        ("plain `tools/call` → its result, median", f"{figures['mcp_call_ms_median']:.1f} ms"),
        ("served call ÷ API turn (its result)", f"{figures['mcp_over_api']:.2f}"),
    ]  # fmt: skip
    lines = ["| figure | measured |", "|---|---|"]
    return "\n".join([*lines, *(f"| {name} | {value} |" for name, value in rows)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20, help="calls timed per figure")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    figures = asyncio.run(main_async(args))
    print(_table(figures))
    if args.out:
        args.out.write_text(json.dumps({name: figures[name] for name in FIGURES}, indent=2))


if __name__ == "__main__":
    main()
