"""`python -m bench.evals`: what running a dataset as an evaluation run costs beside starting the
same turns by hand. On one fresh dev server and one in-process worker (`BenchProvider`: every
turn is one model call that answers `done` at once), N cases × M models run

- **as an evaluation run**: `turnkeeper eval`'s own `run_eval` (the dataset and agent files it
  reads, the `EvalRunWorkflow` it starts, the query it follows the run with, each case it
  prints, to a sink here); every case is a child turn, scored by `EqualsExpected`;
- **as turns started directly**: the same N × M turn requests started with `turnkeeper.start_turn`
  at the same concurrency C, each awaited to its report.

Each repetition runs both, the first repetition the run first, the next the turns first. The
figures are wall time, this process's CPU (the worker and the client: `time.process_time()`)
and the dev server's, and their ratios (the issue's goal: ≤ 1.1×); then the run's own history,
every run of its continue-as-new chain: events and bytes per run and per case.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import shutil
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Final

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from turnkeeper.workflows.evals.eval_run_workflow import BATCH

from bench.history import fetch_chain
from bench.scenario import task_text
from bench.sections import progress
from bench.server import BenchServer, Meter, machine
from bench.subagents import markdown
from bench.turnkeeper_side import bench_data_converter, turnkeeper_worker
from turnkeeper.payloads.stores import STORE_DIR_ENV
from turnkeeper.worker.logging import configure_logging

MODELS: Final = (
    "anthropic:claude-sonnet-4-6",
    "anthropic:claude-haiku-4-5",
    "anthropic:claude-opus-4-6",
)
EVAL, DIRECT = "evaluation run", "turns started directly"
_SIDE_TIMEOUT_S: Final = 1800.0
_WARM_UP_CASES: Final = 2


def dataset(n: int) -> dict[str, Any]:
    """N cases of a one-call turn, each expecting the scripted answer."""
    cases = [
        {"name": f"case-{i}", "inputs": task_text(0, 0), "expected_output": "done"}
        for i in range(n)
    ]
    return {"name": "bench", "evaluators": ["EqualsExpected"], "cases": cases}


def agent(model: str) -> dict[str, Any]:
    return {"id": "bench", "model": model, "tools": [], "max_iterations": 2}


def direct_request(case: int, model: str) -> dict[str, Any]:
    """The request the run builds for a case (`workflows/evals/cases.py`), less its `parent`."""
    task = {"id": f"eval-case-{case}", "input": task_text(0, 0), "constraints": {}}
    return {"agent": agent(model), "task": task}


async def evaluation_run(
    server: BenchServer, folder: Path, queue: str, n: int, models: list[str], concurrency: int
) -> str:
    """Runs the evaluation as `turnkeeper eval` does; its run id."""
    # The console's modules are the client's, not the worker's: imported where they are used.
    from turnkeeper.console.commands import Connection
    from turnkeeper.console.eval_command import EvalOptions, run_eval

    _write_inputs(folder, n, models[0])
    run_id = f"eval-bench-{uuid.uuid4().hex[:10]}"
    options = EvalOptions(
        dataset=folder / "dataset.json",
        agent=folder / "agent.json",
        models=models,
        repeat=1,
        concurrency=concurrency,
        max_cost_usd=None,
        run_id=run_id,
        report=None,
        fail_under=1.0,
        approvals="reject",
        tenant=None,
        task_queue=queue,
    )
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = await run_eval(Connection(server.address, "default", ""), options)
    if code != 0 or printed.getvalue().count("✓") != n * len(models):
        raise RuntimeError(f"the evaluation run {run_id} did not pass every case: exit {code}")
    return run_id


def _write_inputs(folder: Path, n: int, model: str) -> None:
    """The dataset and the agent file, as a user of `turnkeeper eval` has them."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dataset.json").write_text(json.dumps(dataset(n)))
    (folder / "agent.json").write_text(json.dumps(agent(model)))


async def direct_turns(
    client: Client, queue: str, n: int, models: list[str], concurrency: int
) -> None:
    """The same turns, in the run's order (every case on every model), C at a time."""
    from turnkeeper.client.client import start_turn

    units = asyncio.Queue[tuple[int, str]]()
    for case in range(n):
        for model in models:
            units.put_nowait((case, model))
    tag = uuid.uuid4().hex[:8]

    async def one_at_a_time() -> None:
        while not units.empty():
            case, model = units.get_nowait()
            handle = await start_turn(
                client,
                direct_request(case, model),
                id=f"direct-{tag}-{case}-{models.index(model)}",
                task_queue=queue,
            )
            report = await handle.result()
            if report.outcome != "completed" or report.output != "done":
                raise RuntimeError(f"turn {handle.id} ended {report.outcome}: {report.output!r}")

    await asyncio.gather(*(one_at_a_time() for _ in range(concurrency)))


async def run_history(client: Client, run_id: str) -> list[dict[str, Any]]:
    """Each run of the evaluation's continue-as-new chain: its events, bytes, the cases whose
    turns ended in it and the bytes of its start (which carries the results so far)."""
    latest = await client.get_workflow_handle(run_id).describe()
    first = latest.run_id
    while True:  # back to the first run: each start names the run it continued
        history = await client.get_workflow_handle(run_id, run_id=first).fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        if not started.continued_execution_run_id:
            break
        first = started.continued_execution_run_id
    return [_run_figures(events) for events in await fetch_chain(client, run_id, first)]


def _run_figures(events: list[HistoryEvent]) -> dict[str, Any]:
    ended = EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED
    return {
        "events": len(events),
        "bytes": sum(event.ByteSize() for event in events),
        "cases": sum(event.event_type == ended for event in events),
        "start_bytes": events[0].ByteSize(),
        "largest_event_bytes": max(event.ByteSize() for event in events),
    }


async def timed(side: str, work: Any, server_pid: int | None) -> dict[str, Any]:
    with Meter(server_pid) as meter:
        outcome = await asyncio.wait_for(work, _SIDE_TIMEOUT_S)
    progress(f"{side}: wall {meter.wall_s:.1f} s, CPU {meter.cpu_s:.1f} s")
    figures = {"wall_s": meter.wall_s, "cpu_s": meter.cpu_s, "server_cpu_s": meter.server_cpu_s}
    return {**figures, "run_id": outcome} if isinstance(outcome, str) else figures


async def measure(args: argparse.Namespace, server: BenchServer) -> dict[str, Any]:
    data_dir = server.folder / "worker"
    # `run_eval` connects as the command does: to the store this variable names, the worker's.
    os.environ[STORE_DIR_ENV] = str(data_dir / "store")
    client = await Client.connect(server.address, data_converter=bench_data_converter(data_dir))
    queue = f"eval-bench-{uuid.uuid4().hex[:8]}"
    models = list(MODELS[: args.models])
    pid = server.server_pid

    def side(name: str, n: int) -> Any:
        if name == EVAL:
            folder = server.folder / f"eval-{uuid.uuid4().hex[:6]}"
            return evaluation_run(server, folder, queue, n, models, args.concurrency)
        return direct_turns(client, queue, n, models, args.concurrency)

    reps: list[dict[str, Any]] = []
    async with turnkeeper_worker(client, queue, data_dir):
        for name in (EVAL, DIRECT):  # imports, the sandbox, pydantic-evals, caches
            await side(name, _WARM_UP_CASES)
        for rep in range(args.reps):
            order = (EVAL, DIRECT) if rep % 2 == 0 else (DIRECT, EVAL)
            reps.append({name: await timed(name, side(name, args.cases), pid) for name in order})
        runs = await run_history(client, reps[0][EVAL]["run_id"])
    return {
        "cases": args.cases,
        "models": models,
        "concurrency": args.concurrency,
        "turns": args.cases * len(models),
        "reps": reps,
        "median": {name: _medians([rep[name] for rep in reps]) for name in (EVAL, DIRECT)},
        "run_history": runs,
    }


def _medians(figures: list[dict[str, Any]]) -> dict[str, float]:
    keys = ("wall_s", "cpu_s", "server_cpu_s")
    return {key: round(statistics.median(f[key] for f in figures), 2) for key in keys}


def render(results: dict[str, Any]) -> str:
    ours, by_hand = results["median"][EVAL], results["median"][DIRECT]
    rows = [["figure (median of the reps)", EVAL, DIRECT, "ratio"]]
    for key, label in (
        ("wall_s", "wall s"),
        ("cpu_s", "worker CPU s"),
        ("server_cpu_s", "dev-server CPU s"),
    ):
        ratio = ours[key] / by_hand[key] if by_hand[key] else 0.0
        rows.append([label, f"{ours[key]:.2f}", f"{by_hand[key]:.2f}", f"{ratio:.2f}×"])
    head = (
        f"{results['cases']} cases × {len(results['models'])} models = {results['turns']} turns, "
        f"concurrency {results['concurrency']}, {len(results['reps'])} reps"
    )
    return "\n\n".join([head, markdown(rows), _history_table(results["run_history"])])


def _history_table(runs: list[dict[str, Any]]) -> str:
    header = ["run", "cases ended", "events", "KiB", "events / case", "KiB / case", "start KiB"]
    rows = [[*header, "largest event KiB"]]
    for number, run in enumerate(runs, 1):
        per = max(run["cases"], 1)
        rows.append(
            [
                str(number),
                str(run["cases"]),
                f"{run['events']:,}",
                f"{run['bytes'] / 1024:,.1f}",
                f"{run['events'] / per:.1f}",
                f"{run['bytes'] / 1024 / per:.2f}",
                f"{run['start_bytes'] / 1024:,.1f}",
                f"{run['largest_event_bytes'] / 1024:,.1f}",
            ]
        )
    cases = sum(run["cases"] for run in runs)
    events, size = sum(run["events"] for run in runs), sum(run["bytes"] for run in runs)
    rows.append(
        [
            "all",
            str(cases),
            f"{events:,}",
            f"{size / 1024:,.1f}",
            f"{events / max(cases, 1):.1f}",
            f"{size / 1024 / max(cases, 1):.2f}",
            "",
            "",
        ]
    )
    return (
        f"The evaluation run's history, every run of its chain (it continues as new after "
        f"{BATCH} cases):\n\n" + markdown(rows)
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.evals", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--cases", type=int, default=200, help="cases of the dataset")
    parser.add_argument("--models", type=int, default=2, help=f"models (1 to {len(MODELS)})")
    parser.add_argument("--concurrency", type=int, default=8, help="turns running at once")
    parser.add_argument("--reps", type=int, default=2, help="runs of each side, order alternating")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--log-level", default="WARNING", help="of the in-process worker")
    args = parser.parse_args(argv)
    if args.cases < 1 or args.concurrency < 1 or args.reps < 1:
        parser.error("--cases, --concurrency and --reps must be at least 1")
    if not 1 <= args.models <= len(MODELS):
        parser.error(f"--models must be 1 to {len(MODELS)}")
    return args


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    server = BenchServer()
    try:
        async with server:
            progress(f"dev server pid {server.server_pid} on {server.address}")
            results = await measure(args, server)
    finally:
        shutil.rmtree(server.folder, ignore_errors=True)
    results["wall_s"] = round(time.perf_counter() - started, 1)
    results["machine"] = machine()
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
