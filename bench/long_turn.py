"""The measurements of issue #16: many parked turns on one worker, a turn of a thousand
iterations, parked turns with a long transcript, with encryption and in a session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.history import fetch_chain
from bench.parked import park
from bench.sections import TURN_TIMEOUT_S, Bench, progress
from bench.server import Meter
from bench.sides import FLOOR, OURS, Side, in_turns, turnkeeper_side


async def long_turn(bench: Bench, k: int) -> dict[str, Any]:
    """One turn of `k` iterations at L = 0 per side: time and CPU per iteration, and the size
    of each run of its history (ours continues as new when the server suggests it)."""
    result: dict[str, Any] = {"k": k}
    for side in in_turns(bench.sides, 0):
        result[side.name] = await _one_long_turn(bench, side, k)
        progress(f"long turn k={k} {side.name}: {result[side.name]}")
    return result


async def _one_long_turn(bench: Bench, side: Side, k: int) -> dict[str, Any]:
    # At L = 0 a thousand iterations take about a minute per side here; generous for a slow host.
    with Meter(bench.server.server_pid) as meter:
        _, handle = await side.run_turn(k, 0, max(TURN_TIMEOUT_S, k * 1.0))
    runs = await fetch_chain(side.client, handle.id, handle.first_execution_run_id or "")
    run_bytes = [sum(event.ByteSize() for event in run) for run in runs]
    return {
        "wall_s": round(meter.wall_s, 2),
        "wall_ms_per_iter": round(meter.wall_s / k * 1000, 2),
        "worker_cpu_ms_per_iter": round(meter.cpu_s / k * 1000, 2),
        "server_cpu_ms_per_iter": round(meter.server_cpu_s / k * 1000, 2),
        "runs": len(runs),
        "run_kib": [round(size / 1024, 1) for size in run_bytes],
        "run_events": [len(run) for run in runs],
        "total_kib": round(sum(run_bytes) / 1024, 1),
    }


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
