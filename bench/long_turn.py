"""The long-turn section: one turn of a thousand iterations per side, on the in-process workers;
time and CPU per iteration, and the size of each run of its history (ours continues as new)."""

from __future__ import annotations

from typing import Any

from bench.history import fetch_chain
from bench.sections import TURN_TIMEOUT_S, Bench, progress
from bench.server import Meter
from bench.sides import Side, in_turns


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
