"""The history, overhead and concurrency sections, one coroutine each; both sides run in this
process, against the same dev server, interleaved rep by rep."""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from bench.anatomy import field_bytes, per_iteration_fields, samples
from bench.core_log import CoreWarnings
from bench.history import HistoryStats, account, fetch_chain, increment_ratio, per_iteration
from bench.server import BenchServer, Meter
from bench.sides import FLOOR, OURS, Side, in_turns

# A turn that takes longer than this is stuck (a failing workflow task retries forever).
TURN_TIMEOUT_S = 600.0
# Temporal's default warn limits of one run's history (`limit.historySize.warn`,
# `limit.historyCount.warn`).
HISTORY_SIZE_WARN = 10 * 1024 * 1024
HISTORY_COUNT_WARN = 10 * 1024


def progress(message: str) -> None:
    """One line on stderr so a long run shows where it is (stdout carries the table)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass
class Bench:
    server: BenchServer
    floor: Side
    ours: Side
    core_warnings: CoreWarnings

    @property
    def sides(self) -> tuple[Side, Side]:
        return (self.floor, self.ours)


async def warm_up(bench: Bench) -> dict[str, float]:
    """Two short turns per side: the first turn of a worker pays imports and sandbox set-up."""
    first: dict[str, float] = {}
    for side in bench.sides:
        wall, _ = await side.run_turn(2, 0, TURN_TIMEOUT_S)
        first[side.name] = round(wall, 3)
        await side.run_turn(2, 0, TURN_TIMEOUT_S)
    progress(f"warm-up done, first turns {first}")
    return first


@dataclass
class _Turns:
    """What the history section keeps of each turn it ran."""

    stats: dict[str, list[HistoryStats]]
    fields: dict[tuple[str, int], Counter[str]]
    samples: dict[str, dict[str, str]]


async def history(bench: Bench, ks: list[int]) -> dict[str, Any]:
    turns = _Turns({FLOOR: [], OURS: []}, {}, {})
    for index, k in enumerate(ks):
        for side in in_turns(bench.sides, index):
            await _one_history(bench, side, k, turns)
    stats = turns.stats
    result: dict[str, Any] = {side: [s.as_dict() for s in points] for side, points in stats.items()}
    if {10, 30, 50} <= set(ks):
        result["increment_ratio"] = {
            side: round(increment_ratio(points), 3) for side, points in stats.items()
        }
    low, high = _pair(ks)
    result["per_iteration"] = {
        "between_k": [low, high],
        **{
            side: per_iteration(_at(points, low), _at(points, high))
            for side, points in stats.items()
        },
    }
    result["per_iteration_fields"] = {
        side: per_iteration_fields(turns.fields[side, low], turns.fields[side, high], high - low)
        for side in stats
    }
    result["samples"] = turns.samples
    result["server_limit_warnings"] = bench.server.limit_warnings()
    result["run_limits"] = {side: _run_limits(points) for side, points in stats.items()}
    return result


async def _one_history(bench: Bench, side: Side, k: int, turns: _Turns) -> None:
    """Runs one turn at L = 0 and keeps its accounting, field sizes and SDK warnings."""
    mark = len(bench.core_warnings.messages)
    wall, handle = await side.run_turn(k, 0, TURN_TIMEOUT_S)
    runs = await fetch_chain(side.client, handle.id, handle.first_execution_run_id or "")
    stats = account(runs, k, side.model_activity, side.tool_activity)
    stats.sdk_warnings = bench.core_warnings.since(mark)
    turns.stats[side.name].append(stats)
    turns.fields[side.name, k] = field_bytes(runs)
    turns.samples.setdefault(side.name, samples(runs, side.model_activity, side.tool_activity))
    progress(
        f"history {side.name} k={k}: {stats.events} events, {stats.total_bytes} B, "
        f"{stats.runs} run(s), {wall:.1f} s, {len(stats.sdk_warnings)} SDK warning(s)"
    )


def _run_limits(points: list[HistoryStats]) -> dict[str, int]:
    return {
        "largest_run_bytes": max(s.largest_run_bytes for s in points),
        "largest_run_events": max(s.largest_run_events for s in points),
        "size_warn_bytes": HISTORY_SIZE_WARN,
        "count_warn_events": HISTORY_COUNT_WARN,
    }


def _pair(ks: list[int]) -> tuple[int, int]:
    """Two Ks to difference for the per-iteration table; 10 and 50 when both were run."""
    if 10 in ks and 50 in ks:
        return 10, 50
    ordered = sorted(ks)
    return ordered[0], ordered[-1]


def _at(points: list[HistoryStats], k: int) -> HistoryStats:
    return next(s for s in points if s.k == k)


async def overhead(bench: Bench, ks: list[int], latency_ms: float, reps: int) -> list[dict]:
    rows = []
    for k in ks:
        meters: dict[str, list[Meter]] = {FLOOR: [], OURS: []}
        for rep in range(reps):
            for side in in_turns(bench.sides, rep):
                with Meter(bench.server.server_pid) as meter:
                    await side.run_turn(k, latency_ms, TURN_TIMEOUT_S)
                meters[side.name].append(meter)
        row: dict[str, Any] = {"k": k, "latency_ms": latency_ms, "reps": reps}
        for name, measured in meters.items():
            row[name] = _overhead_figures(measured, k, latency_ms)
        progress(f"overhead k={k}: {row}")
        rows.append(row)
    return rows


def _overhead_figures(meters: list[Meter], k: int, latency_ms: float) -> dict[str, Any]:
    wall = statistics.median(m.wall_s for m in meters)
    simulated = (k + 1) * latency_ms / 1000.0
    return {
        "wall_s_runs": [round(m.wall_s, 4) for m in meters],
        "wall_s": round(wall, 4),
        "overhead_ms_per_iter": round((wall - simulated) / k * 1000, 2),
        "worker_cpu_ms_per_iter": round(statistics.median(m.cpu_s for m in meters) / k * 1000, 2),
        "server_cpu_ms_per_iter": round(
            statistics.median(m.server_cpu_s for m in meters) / k * 1000, 2
        ),
    }


async def concurrency(
    bench: Bench, n: int, k: int, latency_ms: float, reps: int, sides: tuple[Side, ...]
) -> dict[str, Any]:
    """`n` turns started at once on one worker per side, `reps` times, interleaved."""
    runs: dict[str, list[dict[str, Any]]] = {side.name: [] for side in sides}
    for rep in range(reps):
        order = in_turns(sides, rep) if len(sides) == 2 else sides  # type: ignore[arg-type]
        for side in order:
            runs[side.name].append(await _crowd(bench, side, n, k, latency_ms))
            progress(f"concurrency n={n} {side.name}: {runs[side.name][-1]}")
    result: dict[str, Any] = {"n": n, "k": k, "latency_ms": latency_ms, "reps": reps}
    for name, measured in runs.items():
        result[name] = {
            "runs": measured,
            "wall_s": round(statistics.median(r["wall_s"] for r in measured), 3),
        }
    return result


async def _crowd(bench: Bench, side: Side, n: int, k: int, latency_ms: float) -> dict[str, Any]:
    # Generous: 1,000 turns on 2 shared cores take minutes.
    timeout_s = max(TURN_TIMEOUT_S, n * 1.0)
    with Meter(bench.server.server_pid) as meter:
        walls = await asyncio.gather(*(side.run_turn(k, latency_ms, timeout_s) for _ in range(n)))
    slowest = max(wall for wall, _ in walls)
    return {
        "wall_s": round(meter.wall_s, 3),
        "slowest_turn_s": round(slowest, 3),
        "worker_cpu_s": round(meter.cpu_s, 2),
        "server_cpu_s": round(meter.server_cpu_s, 2),
    }
