"""The long-turn figure: one turn of 100 model calls whose conversation grows to about 200k
tokens (99 tool results of 8 KiB), on our worker and on the peers' harness, in one sitting.

    .venv/bin/python -m bench.long_history [--model-calls 100] [--result-kib 8]
        [--peers DIR --peers-python PYTHON [--peer-names A,B]] [--out FILE]

One fresh dev server (`BenchServer`, the server's default limits) serves every side in turn.
Ours runs in this process (the real workflow and activities, `BenchProvider` billing
~`result_kib` × 256 input tokens per tool result seen, `fetch_blob` returning the sized blob);
each peer runs in a process of the peers' interpreter (`bench.peer_long_turn`), which imports
the harness from `--peers`. Every side is counted by `bench.history_figures`: history bytes
over every run of the workflow id (ours continues as new), events, the largest single event,
the model calls that completed, how the turn ended, and its wall time from start to end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from temporalio.client import Client

from bench.history import fetch_chain
from bench.history_figures import chain_figures, outcome
from bench.peer_long_turn import PEERS
from bench.sections import progress
from bench.server import BenchServer, machine
from bench.turnkeeper_side import (
    MODEL_ACTIVITY,
    BenchProvider,
    bench_data_converter,
    start_turnkeeper_turn,
    turnkeeper_worker,
)

ROOT = Path(__file__).resolve().parents[1]
# About four bytes of text to a token.
BYTES_PER_TOKEN = 4
DEFAULT_PEERS = (
    "bare-temporal",
    "pydantic-ai/temporal-agent",
    "pydantic-ai/durability",
    "openai-agents/inproc",
)


async def ours(server: BenchServer, k: int, result_bytes: int, timeout_s: float) -> dict[str, Any]:
    """One turn of `k` tool calls on our worker, in this process."""
    data_dir = server.folder / "ours"
    client = await Client.connect(server.address, data_converter=bench_data_converter(data_dir))
    queue = "bench-long-history"
    provider = BenchProvider(tokens_per_result=result_bytes // BYTES_PER_TOKEN)
    async with turnkeeper_worker(
        client, queue, data_dir, provider=provider, result_bytes=result_bytes
    ):
        await (await start_turnkeeper_turn(client, queue, 2, 0)).result()  # warm-up
        started = time.perf_counter()
        handle = await start_turnkeeper_turn(client, queue, k, 0)
        ended = await outcome(handle, timeout_s)
        wall_s = time.perf_counter() - started
    runs = await fetch_chain(client, handle.id, handle.first_execution_run_id or "")
    figures = chain_figures(runs, lambda name: name == MODEL_ACTIVITY)
    store = data_dir / "store"
    stored = sum(path.stat().st_size for path in store.rglob("*") if path.is_file())
    return {"peer": "turnkeeper", "outcome": ended, "wall_s": round(wall_s, 1), **figures,
            "store_bytes": stored}  # fmt: skip


def peer(args: argparse.Namespace, server: BenchServer, label: str, k: int) -> dict[str, Any]:
    """One turn of `k` tool calls on a peer, in a process of the peers' interpreter."""
    command = [
        args.peers_python, "-m", "bench.peer_long_turn", "--peers", str(args.peers),
        "--peer", label, "--k", str(k), "--result-bytes", str(args.result_kib * 1024),
        "--address", server.address, "--timeout-s", str(args.timeout_s),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        # The harness itself broke: say so in the figures rather than lose the other sides.
        return {"peer": label, "outcome": "error", "error": done.stderr.strip()[-600:]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    k = args.model_calls - 1
    server = BenchServer()
    sides: list[dict[str, Any]] = []
    try:
        async with server:
            sides.append(await ours(server, k, args.result_kib * 1024, args.timeout_s))
            progress(f"long history: {_line(sides[-1])}")
            for label in args.peer_names if args.peers else []:
                sides.append(await asyncio.to_thread(peer, args, server, label, k))
                progress(f"long history: {_line(sides[-1])}")
    finally:
        shutil.rmtree(server.folder, ignore_errors=True)
    return {
        "model_calls": args.model_calls,
        "tool_result_bytes": args.result_kib * 1024,
        "conversation_tokens_at_end": k * args.result_kib * 1024 // BYTES_PER_TOKEN,
        "sides": sides,
        "machine": machine(),
    }


def _line(side: dict[str, Any]) -> str:
    keep = ("peer", "outcome", "wall_s", "history_bytes", "events", "largest_event_bytes")
    return json.dumps({key: side.get(key) for key in keep})


def render(results: dict[str, Any]) -> str:
    """The figure as a markdown table, one row per side."""
    rows = [
        f"One turn of {results['model_calls']} model calls, tool results of "
        f"{results['tool_result_bytes'] // 1024} KiB (~{results['conversation_tokens_at_end']:,} "
        "tokens of conversation by the end):",
        "",
        "| side | ends | model calls done | history (all runs) | runs | events | largest event "
        "| wall s |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    # Ours keeps large payloads out of the history, in its store: said beside the table.
    stored: list[str] = []
    for side in results["sides"]:
        if side["outcome"] == "error":
            rows.append(f"| {side['peer']} | harness error | | | | | | |")
            continue
        ending = side["outcome"]
        if ending != "completed":
            reason = side["ending"].get("reason") or side["ending"].get("workflow_task_failure")
            ending = f"{ending}: {reason}"
        rows.append(
            f"| {side['peer']} | {ending} | {side['model_calls_completed']} "
            f"| {side['history_bytes'] / 2**20:.2f} MiB | {side['runs']} | {side['events']:,} "
            f"| {side['largest_event_bytes'] / 1024:.1f} KiB "
            f"({side['largest_event_type']}) | {side['wall_s']} |"
        )
        if "store_bytes" in side:
            stored.append(f"{side['peer']}'s content store: {side['store_bytes'] / 2**20:.2f} MiB")
    return "\n".join([*rows, "", *stored])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-calls", type=int, default=100)
    parser.add_argument("--result-kib", type=int, default=8)
    parser.add_argument("--peers", type=Path, help="the peers' harness folder (none: ours only)")
    parser.add_argument("--peers-python", default=sys.executable, help="the peers' interpreter")
    parser.add_argument("--peer-names", type=lambda text: text.split(","),
                        default=list(DEFAULT_PEERS), help=f"of {', '.join(PEERS)}")  # fmt: skip
    parser.add_argument("--timeout-s", type=float, default=900.0, help="a side's longest wait")
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    sys.stdout.write(render(results) + "\n")
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    # Our turn must complete: that is what the figure shows (the peers' endings are reported).
    sys.exit(0 if results["sides"][0]["outcome"] == "completed" else 1)


if __name__ == "__main__":
    main()
