"""Resident memory of N parked turns: each side's worker runs alone in a subprocess, so its RSS
is the worker's and nothing else's; the turns are started from this process. With K > 0 each
turn first runs K iterations (a transcript of K iterations) and then parks; the parked sections
differ in how many turns, after how many iterations, in sessions or encrypted."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle, WorkflowQueryFailedError
from temporalio.service import RPCError
from turnkeeper.contracts.names import SA_TURN_STATE

from bench.floor import PARKED_QUERY, start_floor_approval, start_floor_parked
from bench.sections import Bench, progress
from bench.server import rss_bytes
from bench.sides import FLOOR, OURS, Side, turnkeeper_side
from bench.turnkeeper_side import start_parked_session_turn, start_turnkeeper_turn

_READY_TIMEOUT_S = 60.0
_PARK_TIMEOUT_S = 900.0
_SETTLE_S = 3.0
_RPC_CONCURRENCY = 50
_BENCH_ROOT = Path(__file__).parent.parent


async def parked(
    sides: tuple[Side, ...],
    n: int,
    address: str,
    data_dir: Path,
    worker_argv: list[str],
    *,
    k: int = 0,
    session: bool = False,
    same_shape_floor: bool = False,
) -> dict[str, Any]:
    """Parks `n` turns (of `k` iterations first; ours in sessions with `session`) on each
    side's worker alone; RSS and time. With `same_shape_floor`, the floor also parks `n`
    workflows of a turn's shape (`FloorApprovalWorkflow`: a model call, then a wait with a
    timeout), under `floor_same_shape`."""
    result: dict[str, Any] = {"n": n, "k": k, "session": session}
    for side in sides:
        folder = data_dir / f"parked-{side.name}"
        result[side.name] = await park(side, n, address, folder, worker_argv, k=k, session=session)
        progress(f"parked n={n} k={k} {side.name}: {result[side.name]}")
        if side.name == FLOOR and same_shape_floor:
            folder = data_dir / "parked-floor-same-shape"
            shaped = await park(side, n, address, folder, [], same_shape=True)
            result["floor_same_shape"] = shaped
            progress(f"parked n={n} floor of the same shape: {shaped}")
    return result


async def parked_encrypted(
    bench: Bench, n: int, encrypting_client: Any, data_dir: Path, worker_argv: list[str]
) -> dict[str, Any]:
    """`n` turns parked on our worker with every payload and stored object encrypted (as with
    TURNKEEPER_ENCRYPTION_KEYS), against the floor's parked workflows in the same section."""
    ours = turnkeeper_side(encrypting_client, "unused: each parked worker has its own queue")
    argv = [*worker_argv, "--encrypt"] if "--encrypt" not in worker_argv else worker_argv
    address = bench.server.address
    result: dict[str, Any] = {"n": n, "k": 0}
    result[FLOOR] = await park(bench.floor, n, address, data_dir / "parked-floor", [])
    progress(f"parked encrypted n={n} {FLOOR}: {result[FLOOR]}")
    result[OURS] = await park(ours, n, address, data_dir / "parked-encrypted", argv)
    progress(f"parked encrypted n={n} {OURS}: {result[OURS]}")
    return result


async def park(
    side: Side,
    n: int,
    address: str,
    data_dir: Path,
    worker_argv: list[str],
    *,
    k: int = 0,
    session: bool = False,
    same_shape: bool = False,
) -> dict[str, Any]:
    """One side's worker in a subprocess: its idle RSS, `n` turns parked, its RSS then."""
    queue = f"bench-parked-{side.name}-{uuid.uuid4().hex[:8]}"
    argv = worker_argv if side.name != FLOOR else []
    process = await worker_process(side.name, address, queue, data_dir, argv)
    try:
        idle = rss_bytes(process.pid)
        started = asyncio.get_running_loop().time()
        handles = await park_turns(side, queue, n, k, session=session, same_shape=same_shape)
        park_s = asyncio.get_running_loop().time() - started
        await asyncio.sleep(_SETTLE_S)
        loaded = rss_bytes(process.pid)
        await _bounded([_terminator(handle) for handle in handles])
    finally:
        await _stop(process)
    return {
        "rss_idle_mib": round(idle / 2**20, 1),
        "rss_parked_mib": round(loaded / 2**20, 1),
        "per_turn_kib": round((loaded - idle) / n / 1024, 1),
        "park_s": round(park_s, 1),
    }


async def worker_process(
    side: str, address: str, queue: str, data_dir: Path, worker_argv: list[str]
) -> asyncio.subprocess.Process:
    """`bench.parked_worker` of `side` polling `queue`, started, ready and settled; the caller
    stops it (`_stop`)."""
    argv = [
        sys.executable, "-m", "bench.parked_worker",
        "--side", side, "--address", address, "--task-queue", queue,
        "--data-dir", str(data_dir), *worker_argv,
    ]  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=_BENCH_ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), _READY_TIMEOUT_S)
        if line.strip() != b"ready":
            raise RuntimeError(f"the {side} worker subprocess did not start: {line!r}")
        await asyncio.sleep(_SETTLE_S)
    except BaseException:
        await _stop(process)
        raise
    return process


async def park_turns(
    side: Side,
    queue: str,
    n: int,
    k: int = 0,
    *,
    session: bool = False,
    same_shape: bool = False,
) -> list[WorkflowHandle[Any, Any]]:
    """Starts `n` turns on `queue` (each runs `k` iterations first; ours, with `session`, as
    the first turn of a session each; the floor's, with `same_shape`, as a turn's approval
    wait) and waits until all park (besides any parked there before)."""
    already = 0 if side.name == FLOOR else await _count(side.client, queue)
    handles = await _bounded([_starter(side, queue, k, session, same_shape) for _ in range(n)])
    await _wait_parked(side, queue, handles, k, already, asks=same_shape)
    return handles


def _starter(side: Side, queue: str, k: int, session: bool, same_shape: bool) -> Any:
    if side.name == FLOOR and same_shape:
        return lambda: start_floor_approval(side.client, queue)
    if side.name == FLOOR:
        return lambda: start_floor_parked(side.client, queue, k)
    if session:
        return lambda: start_parked_session_turn(side.client, queue)
    if k:
        return lambda: start_turnkeeper_turn(side.client, queue, k, 0, park_after=True)
    return lambda: start_turnkeeper_turn(side.client, queue, 1, 0, needs_approval=True)


def _terminator(handle: WorkflowHandle[Any, Any]) -> Any:
    return lambda: handle.terminate("bench: parked measurement done")


async def _bounded(calls: list[Any]) -> list[Any]:
    """Runs the coroutine factories with at most `_RPC_CONCURRENCY` in flight."""
    gate = asyncio.Semaphore(_RPC_CONCURRENCY)

    async def one(call: Any) -> Any:
        async with gate:
            return await call()

    return await asyncio.gather(*(one(call) for call in calls))


async def _wait_parked(
    side: Side,
    queue: str,
    handles: list[WorkflowHandle[Any, Any]],
    k: int,
    already: int,
    *,
    asks: bool = False,
) -> None:
    """Until every turn waits: ours say so in the TurnState search attribute; a floor workflow
    is parked once its first workflow task completed (history length 4), or after K iterations
    (or its model call, with `asks`) once its `parked` query says so."""
    # 10,000 turns on 2 shared cores take minutes to park.
    deadline = asyncio.get_running_loop().time() + max(_PARK_TIMEOUT_S, len(handles) * (0.2 + k))
    waiting = list(handles)
    while waiting:
        if asyncio.get_running_loop().time() > deadline:
            raise RuntimeError(f"{side.name}: {len(waiting)} turns never parked")
        await asyncio.sleep(1.0)
        if side.name == FLOOR:
            waiting = await (_not_done_yet(waiting) if k or asks else _not_parked_yet(waiting))
        else:
            parked = await _count(side.client, queue)
            waiting = [] if parked >= already + len(handles) else waiting


async def _not_parked_yet(handles: list[WorkflowHandle[Any, Any]]) -> list[WorkflowHandle]:
    lengths = await _bounded([_describer(handle) for handle in handles])
    return [handle for handle, length in zip(handles, lengths, strict=True) if length < 4]


async def _not_done_yet(handles: list[WorkflowHandle[Any, Any]]) -> list[WorkflowHandle]:
    answers = await _bounded([_asker(handle) for handle in handles])
    return [handle for handle, parked in zip(handles, answers, strict=True) if not parked]


def _asker(handle: WorkflowHandle[Any, Any]) -> Any:
    async def parked() -> bool:
        try:
            return bool(await handle.query(PARKED_QUERY))
        except (RPCError, WorkflowQueryFailedError):
            return False  # no workflow task completed yet: nothing to query

    return parked


def _describer(handle: WorkflowHandle[Any, Any]) -> Any:
    async def history_length() -> int:
        return (await handle.describe()).history_length

    return history_length


async def _count(client: Client, queue: str) -> int:
    query = f'TaskQueue = "{queue}" AND {SA_TURN_STATE} = "awaiting_approval"'
    return (await client.count_workflows(query)).count


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is not None:
        return
    if process.stdin is not None:
        process.stdin.close()
    try:
        await asyncio.wait_for(process.wait(), 30)
    except TimeoutError:
        process.kill()
        await process.wait()
