"""`python -m bench.run`: turnkeeper against the bare-Temporal floor, in one process, on a fresh
embedded dev server; prints the markdown tables and writes JSON with `--out`.

Sections (`--sections`, comma-separated, in this order):
  history            one turn per K at L = 0 per side; history bytes, split and per-iteration
  overhead           K in --overhead-ks at L = --latency-ms, --reps each, interleaved
  concurrency        --conc-n turns at once (K = --conc-k, L = --conc-latency-ms), --conc-reps
  concurrency-large  --large-n turns at once on one worker, for each side in --large-sides
  parked             --parked-n turns parked on an approval vs bare workflows waiting on a signal
  long-turn          one turn of --long-k iterations at L = 0 per side (ours continues as new)
  parked-large       --park-large-n turns parked on an approval, one worker per side
  parked-transcript  --transcript-n turns parked after --transcript-k iterations each
  parked-encrypted   --parked-n turns parked with encryption on (TURNKEEPER_ENCRYPTION_KEYS)
  parked-session     --parked-n sessions whose first turn is parked on an approval
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client

from bench import report, report_at_scale, sections
from bench.core_log import CoreWarnings, install_core_warnings
from bench.floor import floor_worker
from bench.long_turn import long_turn
from bench.options import add_worker_arguments, describe, worker_argv, worker_options
from bench.parked import parked, parked_encrypted
from bench.server import BenchServer, machine
from bench.sides import FLOOR, OURS, floor_side, turnkeeper_side
from bench.turnkeeper_side import bench_data_converter, turnkeeper_worker
from turnkeeper.worker.logging import configure_logging

ALL_SECTIONS = [
    "history",
    "overhead",
    "concurrency",
    "concurrency-large",
    "long-turn",
    "parked",
    "parked-large",
    "parked-transcript",
    "parked-encrypted",
    "parked-session",
]
# Sections whose workers run in this process; the parked ones run theirs in a subprocess.
IN_PROCESS = {"history", "overhead", "concurrency", "concurrency-large", "long-turn"}
# --quick: every section, small, a few minutes.
QUICK = {
    "history_ks": [10, 30, 50],
    "overhead_ks": [10],
    "reps": 2,
    "conc_n": 20,
    "conc_reps": 1,
    "large_n": 100,
    "parked_n": 100,
    "long_k": 150,
    "park_large_n": 300,
    "transcript_n": 10,
}


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="a small run of every section")
    parser.add_argument("--sections", default=",".join(ALL_SECTIONS))
    parser.add_argument("--history-ks", type=_ints, default=[10, 30, 50, 100, 300])
    parser.add_argument("--overhead-ks", type=_ints, default=[10, 30])
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--conc-n", type=int, default=100)
    parser.add_argument("--conc-k", type=int, default=5)
    parser.add_argument("--conc-latency-ms", type=float, default=100.0)
    parser.add_argument("--conc-reps", type=int, default=3)
    parser.add_argument("--large-n", type=int, default=1000)
    parser.add_argument(
        "--large-sides",
        default=f"{FLOOR},{OURS}",
        help="who runs concurrency-large (e.g. turnkeeper)",
    )
    parser.add_argument("--parked-n", type=int, default=1000)
    parser.add_argument("--long-k", type=int, default=1000)
    parser.add_argument("--park-large-n", type=int, default=10_000)
    parser.add_argument("--transcript-n", type=int, default=200)
    parser.add_argument("--transcript-k", type=int, default=50)
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--log-level", default="WARNING", help="of the in-process workers")
    parser.add_argument("--keep-server-dir", action="store_true")
    add_worker_arguments(parser)
    args = parser.parse_args(argv)
    args.sections = [s for s in args.sections.split(",") if s]
    unknown = set(args.sections) - set(ALL_SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {ALL_SECTIONS}")
    if args.quick:
        for name, value in QUICK.items():
            setattr(args, name, value)
    return args


async def measure(
    args: argparse.Namespace, server: BenchServer, core_warnings: CoreWarnings
) -> dict[str, Any]:
    results: dict[str, Any] = {"timings_s": {}}
    timings = results["timings_s"]
    floor_client = await Client.connect(server.address)
    data_dir = server.folder / "turnkeeper"
    ours_client = await Client.connect(
        server.address, data_converter=bench_data_converter(data_dir, encrypt=args.encrypt)
    )
    floor_queue = f"bench-floor-{uuid.uuid4().hex[:8]}"
    ours_queue = f"bench-turnkeeper-{uuid.uuid4().hex[:8]}"
    bench = sections.Bench(
        server,
        floor_side(floor_client, floor_queue),
        turnkeeper_side(ours_client, ours_queue),
        core_warnings,
    )
    in_process = [s for s in args.sections if s in IN_PROCESS]
    if in_process:
        async with (
            floor_worker(floor_client, floor_queue),
            turnkeeper_worker(
                ours_client,
                ours_queue,
                data_dir,
                local_tool=args.local_tool,
                encrypt=args.encrypt,
                **worker_options(args),
            ),
        ):
            results["warm_up_first_turn_s"] = await sections.warm_up(bench)
            for name in in_process:
                started = time.perf_counter()
                results[name.replace("-", "_")] = await _section(name, args, bench)
                timings[name] = round(time.perf_counter() - started, 1)
    for name in (s for s in args.sections if s not in IN_PROCESS):
        started = time.perf_counter()
        sections.progress(f"section {name}")
        results[name.replace("-", "_")] = await _parked_section(name, args, bench, data_dir)
        timings[name] = round(time.perf_counter() - started, 1)
    return results


async def _parked_section(
    name: str, args: argparse.Namespace, bench: sections.Bench, data_dir: Path
) -> dict[str, Any]:
    address, argv = bench.server.address, worker_argv(args)
    if name == "parked":
        return await parked(
            bench.sides, args.parked_n, address, data_dir, argv, same_shape_floor=True
        )
    if name == "parked-large":
        return await parked(bench.sides, args.park_large_n, address, data_dir, argv)
    if name == "parked-session":
        return await parked(bench.sides, args.parked_n, address, data_dir, argv, session=True)
    if name == "parked-transcript":
        return await parked(
            bench.sides, args.transcript_n, address, data_dir, argv, k=args.transcript_k
        )
    encrypting = await Client.connect(
        address, data_converter=bench_data_converter(data_dir / "parked-encrypted", encrypt=True)
    )
    return await parked_encrypted(bench, args.parked_n, encrypting, data_dir, argv)


async def _section(name: str, args: argparse.Namespace, bench: sections.Bench) -> Any:
    sections.progress(f"section {name}")
    if name == "history":
        return await sections.history(bench, args.history_ks)
    if name == "overhead":
        return await sections.overhead(bench, args.overhead_ks, args.latency_ms, args.reps)
    if name == "long-turn":
        return await long_turn(bench, args.long_k)
    if name == "concurrency":
        return await sections.concurrency(
            bench, args.conc_n, args.conc_k, args.conc_latency_ms, args.conc_reps, bench.sides
        )
    chosen = args.large_sides.split(",")
    sides = tuple(side for side in bench.sides if side.name in chosen)
    return await sections.concurrency(
        bench, args.large_n, args.conc_k, args.conc_latency_ms, 1, sides
    )


def render(results: dict[str, Any]) -> str:
    summary = report.summary_rows(results)
    parts = [report.markdown(summary)] if summary else []
    goals = report_at_scale.scale_goal_rows(results)
    if goals:
        parts += ["Goals at scale:", report.markdown(goals)]
    reported = report_at_scale.reported_scale_rows(results)
    if reported:
        parts += ["At scale, reported:", report.markdown(reported)]
    if "history" in results:
        parts += [report.history_detail(results["history"])]
        parts += [report.per_iteration_detail(results["history"])]
        parts += [report.per_iteration_fields_detail(results["history"])]
    timings = ", ".join(f"{name} {s:g} s" for name, s in results["timings_s"].items())
    parts.append(f"Section times: {timings}; whole run {results['wall_s']:g} s.")
    return "\n\n".join(parts)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    core_warnings = install_core_warnings()
    server = BenchServer()
    try:
        async with server:
            sections.progress(f"dev server pid {server.server_pid} on {server.address}")
            results = await measure(args, server, core_warnings)
    finally:
        if not args.keep_server_dir:
            shutil.rmtree(server.folder, ignore_errors=True)
    results["wall_s"] = round(time.perf_counter() - started, 1)
    results["sdk_warnings"] = core_warnings.messages
    results["machine"] = machine()
    results["worker_options"] = describe(args)
    results["sides"] = [FLOOR, OURS]
    return results


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    configure_logging(args.log_level)
    results = asyncio.run(main_async(args))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    sys.stdout.write(render(results) + "\n")


if __name__ == "__main__":
    main()
