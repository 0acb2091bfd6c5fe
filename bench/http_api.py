"""The HTTP API's cost (docs/http-api.md): decisions per second through `POST
/v1/turns/{id}/decisions` against the `decide` update called directly (`TurnHandle.approve`),
and the time from a decision to the turn's next event on the API's event stream.

    .venv/bin/python -m bench.http_api [--turns 40] [--concurrency 8] [--latency-samples 10]
        [--out FILE]

`--out` writes the four figures the issue's targets are read on (`FIGURES`) as JSON.

One process: a fresh dev server (`BenchServer`), `python worker.py` against it as its own
process, the API on uvicorn in this process on a free port, every turn on the offline demo model
(three model calls, then a `write_file` that waits for approval). Turns are parked at their
approval first, so a figure counts only the deciding.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx2 as httpx
import uvicorn
from turnkeeper.contracts.signals import TurnStatus

import turnkeeper
from bench.server import BenchServer, free_port
from turnkeeper.http.app import create_app
from turnkeeper.http.tokens import TokenStore
from turnkeeper.http.turns import TurnService

ROOT = Path(__file__).resolve().parents[1]
# What `--out` writes: the figures the targets are read on, and nothing else.
FIGURES = ("direct_per_s", "api_per_s", "sse_latency_ms_median", "sse_latency_ms_max")
# The API's caller: a member, deciding on the turns it owns.
IDENTITY = "alice"
AGENT = {
    "id": "bench-http",
    "model": "demo:workspace-summarizer",
    "tools": ["list_files", "read_file", "write_file"],
}


async def _park(client: Any, queue: str, count: int) -> list[Any]:
    """`count` turns, each waiting for the approval of its `write_file`."""
    handles = [
        await turnkeeper.start_turn(
            client,
            agent=AGENT,
            task={"id": f"t-{i}", "input": "Summarise"},
            id=f"bench-http-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
            # Owned by the API's identity, as a turn it started would be: its decisions go
            # through the same checks as a member's on its own turn.
            started_by=IDENTITY,
        )
        for i in range(count)
    ]
    for handle in handles:
        while True:
            status: TurnStatus = await handle.status()
            if status.pending:
                break
            await asyncio.sleep(0.05)
    return handles


async def _timed(calls: list[Any], concurrency: int) -> float:
    """Decisions per second of `calls` (coroutine factories), `concurrency` at a time."""
    gate = asyncio.Semaphore(concurrency)

    async def one(call: Any) -> None:
        async with gate:
            await call()

    began = time.perf_counter()
    await asyncio.gather(*(one(call) for call in calls))
    return len(calls) / (time.perf_counter() - began)


async def _pending_id(handle: Any) -> str:
    return str((await handle.status()).pending[0].call_id)


async def decisions_per_second(
    client: Any, queue: str, http: httpx.AsyncClient, turns: int, concurrency: int
) -> dict[str, float]:
    direct = await _park(client, queue, turns)
    direct_ids = [await _pending_id(h) for h in direct]
    api = await _park(client, queue, turns)
    api_ids = [await _pending_id(h) for h in api]

    def by_update(handle: Any, call_id: str) -> Any:
        return lambda: handle.approve(call_id, approver="alice")

    def by_api(handle: Any, call_id: str) -> Any:
        async def post() -> None:
            answer = await http.post(
                f"/v1/turns/{handle.id}/decisions", json={"call_id": call_id, "approved": True}
            )
            answer.raise_for_status()

        return post

    return {
        "direct_per_s": await _timed(
            [by_update(h, c) for h, c in zip(direct, direct_ids, strict=True)], concurrency
        ),
        "api_per_s": await _timed(
            [by_api(h, c) for h, c in zip(api, api_ids, strict=True)], concurrency
        ),
    }


async def decision_to_event_ms(
    client: Any, queue: str, http: httpx.AsyncClient, samples: int
) -> list[float]:
    """Per turn: follow its events over the API, decide, time until the next event arrives."""
    latencies: list[float] = []
    for handle in await _park(client, queue, samples):
        call_id = await _pending_id(handle)
        async with http.stream("GET", f"/v1/turns/{handle.id}/events") as stream:
            decided_at: float | None = None
            async for line in stream.aiter_lines():
                if not line.startswith("data: "):
                    continue
                kind = json.loads(line[6:])["kind"]
                if decided_at is not None:
                    latencies.append((time.perf_counter() - decided_at) * 1000)
                    break
                if kind == "approval_requested":
                    decided_at = time.perf_counter()
                    answer = await http.post(
                        f"/v1/turns/{handle.id}/decisions",
                        json={"call_id": call_id, "approved": True},
                    )
                    answer.raise_for_status()
    return latencies


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    server = BenchServer()
    try:
        async with server:
            queue = f"bench-http-{uuid.uuid4().hex[:6]}"
            workspace = server.folder / "workspace"
            workspace.mkdir()
            (workspace / "notes.md").write_text("# Notes\n")
            worker = await asyncio.create_subprocess_exec(
                sys.executable, str(ROOT / "worker.py"), "--address", server.address,
                "--task-queue", queue,
                env={"PATH": "/usr/bin:/bin", "AGENT_WORKSPACE": str(workspace),
                     "TURNKEEPER_DATA_DIR": str(server.folder / "data")},
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            try:
                return await _measure(args, server, queue)
            finally:
                worker.terminate()
                await worker.wait()
    finally:
        shutil.rmtree(server.folder, ignore_errors=True)


async def _measure(args: argparse.Namespace, server: BenchServer, queue: str) -> dict[str, Any]:
    client = await turnkeeper.connect(address=server.address)
    tokens = TokenStore(server.folder / "tokens.json")
    token = tokens.add(IDENTITY)
    port = free_port()
    app = create_app(TurnService(client), tokens)
    api = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning"))
    serving = asyncio.create_task(api.serve())
    try:
        while not api.started:  # noqa: ASYNC110  (uvicorn says it has started with a flag only)
            await asyncio.sleep(0.05)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60
        ) as http:
            rates = await decisions_per_second(client, queue, http, args.turns, args.concurrency)
            latencies = await decision_to_event_ms(client, queue, http, args.latency_samples)
    finally:
        api.should_exit = True
        await serving
    return {
        "turns": args.turns,
        "concurrency": args.concurrency,
        **rates,
        "sse_latency_ms_median": statistics.median(latencies),
        "sse_latency_ms_max": max(latencies),
        "samples": len(latencies),
    }


def render(results: dict[str, Any]) -> str:
    return "\n".join(
        [
            "| figure | measured |",
            "|---|---|",
            f"| decisions per second, `decide` update directly ({results['turns']} calls, "
            f"{results['concurrency']} at a time) | {results['direct_per_s']:.1f} |",
            f"| decisions per second through `POST /v1/turns/{{id}}/decisions` | "
            f"{results['api_per_s']:.1f} |",
            f"| decision to the turn's next event on `GET /v1/turns/{{id}}/events`, median / max "
            f"of {results['samples']} | {results['sse_latency_ms_median']:.0f} ms / "
            f"{results['sse_latency_ms_max']:.0f} ms |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency-samples", type=int, default=10)
    parser.add_argument("--out", type=Path, help="write the figures (FIGURES) here as JSON")
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    sys.stdout.write(render(results) + "\n" + json.dumps(results) + "\n")
    if args.out is not None:
        args.out.write_text(json.dumps(figures(results)) + "\n")


def figures(results: dict[str, Any]) -> dict[str, float]:
    """The figures `--out` writes, from a run's results."""
    return {name: float(results[name]) for name in FIGURES}


if __name__ == "__main__":
    main()
