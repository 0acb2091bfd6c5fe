"""The soak: turns run back to back for a set time on a real dev server and a worker process of
its own, and whether the worker's memory stays flat.

    .venv/bin/python -m bench.soak --minutes N [--concurrency 8] [--k 3] [--latency-ms 10]
        [--sample-s S] [--max-slope-mib 20] [--leak-kib-per-call N] [--out FILE]

`--concurrency` loops each start a turn (K tool calls, L per model call, our real workflow and
activities in `python -m bench.parked_worker`, `BenchProvider` and `fetch_blob` as in every
figure of the bench), wait for its report, check it played the script, and start the next.
Every `--sample-s` the soak records the turns completed so far, the worker's RSS, the dev
server's RSS, the history bytes and events of the turns completed (Σ `event.ByteSize()` of
each, fetched as it completes), and the bytes on disk of the content store and of the
server's SQLite file.

The verdict (`verdict`), as code: over the second half of the samples (the first half warms
caches, imports and allocator arenas), the least-squares slope of the worker's RSS against
turns completed, in MiB per 1,000 turns, must stay under `--max-slope-mib`, and every turn must
complete; the command exits 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from temporalio.client import Client
from turnkeeper.activities.providers.provider import ModelRequest, ModelResponse, TextSink

from bench.history import fetch_chain
from bench.scenario import OURS
from bench.sections import progress
from bench.server import BenchServer, machine, rss_bytes
from bench.sides import result_within
from bench.turnkeeper_side import (
    BenchProvider,
    bench_data_converter,
    check_report,
    start_turnkeeper_turn,
)

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20
# 20 KiB a turn: a fifth of what one parked turn holds in our worker (124 KiB, docs/performance.md),
# so a worker that kept each finished turn would fail; above the noise of a two-minute run on a
# shared 2-core machine (bench/README.md, "Soak"). A smaller leak shows in a longer run's slope.
DEFAULT_MAX_SLOPE_MIB = 20.0
_READY_TIMEOUT_S = 60.0
_TURN_TIMEOUT_S = 120.0


@dataclass
class Sample:
    """One point of the series."""

    t_s: float
    turns: int
    worker_rss_mib: float
    server_rss_mib: float
    history_mib: float
    history_events: int
    store_mib: float
    server_db_mib: float


@dataclass
class Tally:
    """What the turn loops have done so far."""

    turns: int = 0
    failures: list[str] = field(default_factory=list)
    history_bytes: int = 0
    history_events: int = 0


class LeakingProvider(BenchProvider):
    """`BenchProvider` that keeps `kib` KiB for good at each call: a worker with a known leak,
    which the soak must fail (`--leak-kib-per-call`)."""

    def __init__(self, kib: int) -> None:
        super().__init__()
        self.kib = kib
        self.kept: list[bytearray] = []

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        self.kept.append(bytearray(b"x" * (self.kib * 1024)))  # written, so resident
        return await super().complete(request, on_text)


@asynccontextmanager
async def worker_process(
    address: str, queue: str, data_dir: Path, leak_kib_per_call: int = 0
) -> AsyncIterator[int]:
    """Our worker in a process of its own (`bench.parked_worker`); yields its pid."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.parked_worker", "--side", OURS, "--address", address,
        "--task-queue", queue, "--data-dir", str(data_dir),
        "--leak-kib-per-call", str(leak_kib_per_call),
        cwd=ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), _READY_TIMEOUT_S)
        if line.strip() != b"ready":
            raise RuntimeError(f"the worker subprocess did not start: {line!r}")
        yield process.pid
    finally:
        if process.returncode is None and process.stdin is not None:
            process.stdin.close()  # the worker stops when its stdin closes
            try:
                await asyncio.wait_for(process.wait(), 30)
            except TimeoutError:
                process.kill()
                await process.wait()


async def turn_loop(
    client: Client, queue: str, args: argparse.Namespace, until: float, tally: Tally
) -> None:
    """Turns back to back until `until` (monotonic); each checked and its history counted."""
    while time.monotonic() < until:
        handle = await start_turnkeeper_turn(client, queue, args.k, args.latency_ms)
        try:
            check_report(await result_within(handle, _TURN_TIMEOUT_S, handle.id), args.k)
        except Exception as error:  # every failure is a finding: kept, and judged at the end
            tally.failures.append(f"{handle.id}: {type(error).__name__}: {error}"[:300])
            continue
        runs = await fetch_chain(client, handle.id, handle.first_execution_run_id or "")
        tally.turns += 1
        tally.history_bytes += sum(event.ByteSize() for run in runs for event in run)
        tally.history_events += sum(len(run) for run in runs)


def _folder_mib(folder: Path) -> float:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) / MIB


def sample(
    started: float, tally: Tally, worker_pid: int, server: BenchServer, data_dir: Path
) -> Sample:
    """The series' point now."""
    server_pid = server.server_pid
    return Sample(
        t_s=round(time.monotonic() - started, 1),
        turns=tally.turns,
        worker_rss_mib=round(rss_bytes(worker_pid) / MIB, 2),
        server_rss_mib=round(rss_bytes(server_pid) / MIB, 1) if server_pid else 0.0,
        history_mib=round(tally.history_bytes / MIB, 2),
        history_events=tally.history_events,
        store_mib=round(_folder_mib(data_dir / "store"), 2),
        server_db_mib=round(_folder_mib(server.folder / "server"), 2),
    )


def slope_per_1000_turns(points: list[Sample]) -> float:
    """Least-squares slope of the worker's RSS against turns completed, MiB per 1,000 turns."""
    xs = [point.turns for point in points]
    ys = [point.worker_rss_mib for point in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        return 0.0
    return 1000 * sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def verdict(series: list[Sample], failures: list[str], max_slope_mib: float) -> dict[str, Any]:
    """Flat memory and every turn completed: the soak's property, as code."""
    second_half = series[len(series) // 2 :]
    slope = slope_per_1000_turns(second_half) if len(second_half) >= 2 else 0.0
    # A second half without turns (a stalled worker) proves nothing about memory.
    enough = len(second_half) >= 2 and second_half[-1].turns > second_half[0].turns
    flat = enough and slope <= max_slope_mib
    return {
        "rss_slope_mib_per_1000_turns": round(slope, 2),
        "max_slope_mib_per_1000_turns": max_slope_mib,
        "second_half_turns": second_half[-1].turns - second_half[0].turns if enough else 0,
        "flat": flat,
        "failed_turns": len(failures),
        "holds": flat and not failures,
    }


async def soak(args: argparse.Namespace) -> dict[str, Any]:
    """Runs the soak the flags describe: its series, its turns' failures and its verdict."""
    server = BenchServer()
    data_dir = server.folder / "ours"
    queue = f"bench-soak-{uuid.uuid4().hex[:8]}"
    series: list[Sample] = []
    tally = Tally()
    try:
        worker = worker_process(server.address, queue, data_dir, args.leak_kib_per_call)
        async with server, worker as worker_pid:
            converter = bench_data_converter(data_dir)
            client = await Client.connect(server.address, data_converter=converter)
            started = time.monotonic()
            until = started + args.minutes * 60
            loops = [turn_loop(client, queue, args, until, tally) for _ in range(args.concurrency)]
            running = asyncio.gather(*loops)
            while not running.done():
                series.append(sample(started, tally, worker_pid, server, data_dir))
                progress(f"soak {json.dumps(asdict(series[-1]))}")
                await asyncio.wait({running}, timeout=args.sample_s)
            await running
            series.append(sample(started, tally, worker_pid, server, data_dir))
    finally:
        shutil.rmtree(server.folder, ignore_errors=True)
    return {
        "minutes": args.minutes,
        "concurrency": args.concurrency,
        "k": args.k,
        "latency_ms": args.latency_ms,
        "turns": tally.turns,
        "failures": tally.failures[:20],
        "verdict": verdict(series, tally.failures, args.max_slope_mib),
        "series": [asdict(point) for point in series],
        "machine": machine(),
    }


def render(results: dict[str, Any]) -> str:
    """The series, thinned to about a dozen rows, and the verdict."""
    series = results["series"]
    step = max(1, len(series) // 12)
    rows = [
        "| min | turns | worker RSS MiB | server RSS MiB | history MiB (events) | store MiB "
        "| server DB MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for point in [*series[::step][:-1], series[-1]]:
        rows.append(
            f"| {point['t_s'] / 60:.1f} | {point['turns']:,} | {point['worker_rss_mib']:.1f} "
            f"| {point['server_rss_mib']:.1f} | {point['history_mib']:.1f} "
            f"({point['history_events']:,}) | {point['store_mib']:.1f} "
            f"| {point['server_db_mib']:.1f} |"
        )
    judged = results["verdict"]
    rows.append(
        f"\nworker RSS slope over the second half: {judged['rss_slope_mib_per_1000_turns']} MiB "
        f"per 1,000 turns (bound {judged['max_slope_mib_per_1000_turns']}), "
        f"{judged['failed_turns']} failed turns: {'holds' if judged['holds'] else 'VIOLATED'}"
    )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, required=True)
    parser.add_argument("--concurrency", type=int, default=8, help="turn loops at once")
    parser.add_argument("--k", type=int, default=3, help="tool calls per turn")
    parser.add_argument("--latency-ms", type=float, default=10.0, help="per model call")
    parser.add_argument("--sample-s", type=float, help="between samples (default: 60 a run)")
    parser.add_argument("--max-slope-mib", type=float, default=DEFAULT_MAX_SLOPE_MIB)
    parser.add_argument(
        "--leak-kib-per-call", type=int, default=0, help="a worker leaking this much a model call"
    )
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    args = parser.parse_args()
    if args.sample_s is None:
        args.sample_s = max(1.0, args.minutes * 60 / 60)
    results = asyncio.run(soak(args))
    sys.stdout.write(render(results) + "\n")
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    sys.exit(0 if results["verdict"]["holds"] else 1)


if __name__ == "__main__":
    main()
