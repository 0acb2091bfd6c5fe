"""What a turn parked by the built-in `wait` tool costs the worker, beside one parked on an
approval: `python -m bench.waiting [--n N] [--out FILE]` parks N turns of each kind on a worker
alone in its process (`bench.parked_worker`, as `bench.parked` does) and reads its resident
memory, then checks that a waiting turn's history does not grow while it waits.

Writes `{"n", "approval": {…}, "waiting": {…}, "ratio", "history_events_at_park",
"history_events_later"}`; `ratio` is the waiting turns' RSS growth over the approval turns'.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from turnkeeper.contracts.names import SA_TURN_STATE
from turnkeeper.contracts.waits import WAIT_TOOL

from bench.parked import _bounded, _stop, worker_process
from bench.server import BenchServer, rss_bytes
from bench.sides import OURS
from bench.turnkeeper_side import bench_data_converter, turn_request
from turnkeeper.client.turns import start_turn_workflow

_SETTLE_S = 3.0
_LATER_S = 10.0


async def _start(client: Client, queue: str, waits: bool) -> WorkflowHandle[Any, Any]:
    if waits:
        parking = turn_request(0, 0, park_after=True)
        agent = parking.agent.model_copy(update={"tools": [WAIT_TOOL]})
        task = parking.task.model_copy(update={"constraints": type(parking.task.constraints)()})
        request = parking.model_copy(update={"agent": agent, "task": task})
    else:
        request = turn_request(1, 0, needs_approval=True)
    return await start_turn_workflow(
        client, request, workflow_id=f"turn-bench-wait-{uuid.uuid4().hex[:10]}", task_queue=queue
    )


async def _parked(client: Client, queue: str, state: str, n: int) -> None:
    query = f'TaskQueue = "{queue}" AND {SA_TURN_STATE} = "{state}"'
    deadline = asyncio.get_running_loop().time() + max(300.0, n * 0.5)
    while (await client.count_workflows(query)).count < n:
        if asyncio.get_running_loop().time() > deadline:
            raise RuntimeError(f"{n} turns never all reached {state}")
        await asyncio.sleep(1.0)


async def park(client: Client, address: str, data_dir: Path, n: int, waits: bool) -> dict[str, Any]:
    """N turns parked on one worker subprocess: its idle RSS, its RSS then, the handles' ends."""
    queue = f"bench-waiting-{uuid.uuid4().hex[:8]}"
    process = await worker_process(OURS, address, queue, data_dir, [])
    result: dict[str, Any] = {}
    try:
        idle = rss_bytes(process.pid)
        handles = await _bounded([lambda: _start(client, queue, waits) for _ in range(n)])
        await _parked(client, queue, "waiting" if waits else "awaiting_approval", n)
        await asyncio.sleep(_SETTLE_S)
        loaded = rss_bytes(process.pid)
        result = {
            "rss_idle_mib": round(idle / 2**20, 1),
            "rss_parked_mib": round(loaded / 2**20, 1),
            "per_turn_kib": round((loaded - idle) / n / 1024, 1),
        }
        if waits:
            result["history_events_at_park"] = (await handles[0].describe()).history_length
            await asyncio.sleep(_LATER_S)
            result["history_events_later"] = (await handles[0].describe()).history_length
        await _bounded([lambda h=h: h.terminate("bench: waiting measured") for h in handles])
    finally:
        await _stop(process)
    return result


async def measure(n: int) -> dict[str, Any]:
    server = BenchServer()
    try:
        async with server:
            data_dir = server.folder / "turnkeeper"
            client = await Client.connect(
                server.address, data_converter=bench_data_converter(data_dir)
            )
            approval = await park(client, server.address, data_dir / "approval", n, False)
            waiting = await park(client, server.address, data_dir / "waiting", n, True)
    finally:
        shutil.rmtree(server.folder, ignore_errors=True)
    grown = max(approval["rss_parked_mib"] - approval["rss_idle_mib"], 0.1)
    return {
        "n": n,
        "approval": approval,
        "waiting": waiting,
        "ratio": round((waiting["rss_parked_mib"] - waiting["rss_idle_mib"]) / grown, 2),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.waiting")
    parser.add_argument("--n", type=int, default=1000, help="turns parked of each kind")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here too")
    args = parser.parse_args(argv)
    figures = asyncio.run(measure(args.n))
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
