"""`python -m bench.subagents`: a lead agent fanning out to N sub-agents of K tool calls each,
side by side in one run with the same N × K tool calls in one turn and with the bare-Temporal
floor of both shapes; prints markdown tables (progress on stderr) and, with `--out`, JSON.

Shapes, every model call taking L (the scripted model of the other benches, in-process):
  floor tree       `bench.floor_tree`: a parent workflow, N child workflows of the floor's loop
  turnkeeper tree  a lead `AgentTurnWorkflow` whose first answer calls its sub-agent `worker` N
                   times at once; each child turn runs K × (model → `fetch_blob`), then answers
  turnkeeper turn  one turn of N × K iterations (model → `fetch_blob`): the same tool calls
  floor turn       the floor's loop of N × K iterations
The parent's history is measured at N/2 and N sub-agents with C-character child outputs, and at
N with 10 × C, to show what it grows with: the number of sub-agent calls, or their content.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from turnkeeper.activities.providers.provider import ModelRequest, ModelResponse, TextSink
from turnkeeper.contracts.messages import TextBlock, ToolResultBlock, ToolUseBlock
from turnkeeper.contracts.turn import AgentReport, TurnRequest

from bench.floor import start_floor_turn
from bench.floor_tree import SUBAGENT_NAME, child_output, floor_tree_worker, start_floor_tree
from bench.history import fetch_chain
from bench.scenario import MODEL, TOOL_NAME, task_text
from bench.sections import TURN_TIMEOUT_S, progress
from bench.server import BenchServer, Meter, machine
from bench.sides import result_within
from bench.turnkeeper_side import (
    BenchProvider,
    bench_data_converter,
    start_turnkeeper_turn,
    turnkeeper_worker,
)
from turnkeeper.worker.logging import configure_logging

FLOOR_TREE, OURS_TREE, OURS_TURN, FLOOR_TURN = (
    "floor tree",
    "turnkeeper tree",
    "turnkeeper one turn",
    "floor one turn",
)
_LEAD = re.compile(r"fan out n=(\d+) k=(\d+) latency_ms=(\d+(?:\.\d+)?) out=(\d+)")
_OUT = re.compile(r"\bout=(\d+)")

Run = Callable[[int, int, float, int], Awaitable[WorkflowHandle[Any, Any]]]


def lead_text(n: int, k: int, latency_ms: float, output_chars: int) -> str:
    return f"Benchmark lead: fan out n={n} k={k} latency_ms={latency_ms:g} out={output_chars}"


def child_text(k: int, latency_ms: float, output_chars: int) -> str:
    return f"{task_text(k, latency_ms)} out={output_chars}"


class TreeBenchProvider(BenchProvider):
    """`BenchProvider`, plus the lead: its first answer calls `worker` N times (one tool-use
    block each), its second answers "done"; a child whose task says `out=C` answers C chars."""

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        task = _task_of(request)
        lead = _LEAD.search(task)
        if lead is not None:
            return await self._lead(request, lead)
        response = await super().complete(request, on_text)
        out = _OUT.search(task)
        if out is not None and response.stop_reason == "end_turn":
            text = child_output(int(out.group(1)))
            response = response.model_copy(update={"content": [TextBlock(text=text)]})
        return response

    async def _lead(self, request: ModelRequest, lead: re.Match[str]) -> ModelResponse:
        n, k, latency_ms, chars = int(lead[1]), int(lead[2]), float(lead[3]), int(lead[4])
        answered = any(
            isinstance(block, ToolResultBlock)
            for message in request.messages
            for block in message.content
        )
        if latency_ms > 0:
            await asyncio.sleep(latency_ms / 1000.0)
        usage = {"input_tokens": 300, "output_tokens": 40}
        if answered:
            content: list[Any] = [TextBlock(text="done")]
            return ModelResponse.model_validate(
                {"content": content, "stop_reason": "end_turn", "usage": usage, "model": MODEL}
            )
        task = {"task": child_text(k, latency_ms, chars)}
        content = [
            ToolUseBlock(id=f"toolu_lead_{i:03d}", name=SUBAGENT_NAME, input=task) for i in range(n)
        ]
        return ModelResponse.model_validate(
            {"content": content, "stop_reason": "tool_use", "usage": usage, "model": MODEL}
        )


def _task_of(request: ModelRequest) -> str:
    first = next((m for m in request.messages if m.role == "user"), None)
    return first.text() if first is not None else ""


def tree_request(n: int, k: int, latency_ms: float, output_chars: int) -> TurnRequest:
    """The lead agent: no tools of its own, one sub-agent `worker` with `fetch_blob`."""
    worker = {"id": "bench-worker", "model": MODEL, "tools": [TOOL_NAME], "max_iterations": k + 1}
    return TurnRequest.model_validate(
        {
            "agent": {
                "id": "bench-lead",
                "model": MODEL,
                "tools": [],
                "max_iterations": 3,
                "subagents": [
                    {"name": SUBAGENT_NAME, "description": "Runs K tool calls.", "agent": worker}
                ],
            },
            "task": {"id": f"bench-lead-n{n}", "input": lead_text(n, k, latency_ms, output_chars)},
        }
    )


class Shapes:
    """Starts each shape on its worker's queue."""

    def __init__(self, floor: Client, ours: Client, floor_queue: str, ours_queue: str) -> None:
        self.floor, self.ours = floor, ours
        self.floor_queue, self.ours_queue = floor_queue, ours_queue

    def runner(self, shape: str) -> Run:
        return {
            FLOOR_TREE: self._floor_tree,
            OURS_TREE: self._ours_tree,
            OURS_TURN: self._ours_turn,
            FLOOR_TURN: self._floor_turn,
        }[shape]

    def client(self, shape: str) -> Client:
        return self.floor if shape.startswith("floor") else self.ours

    async def _floor_tree(self, n: int, k: int, latency_ms: float, chars: int) -> Any:
        return await start_floor_tree(self.floor, self.floor_queue, n, k, latency_ms, chars)

    async def _ours_tree(self, n: int, k: int, latency_ms: float, chars: int) -> Any:
        from turnkeeper.client.turns import start_turn_workflow

        request = tree_request(n, k, latency_ms, chars)
        workflow_id = f"turn-bench-lead-n{n}-{uuid.uuid4().hex[:10]}"
        return await start_turn_workflow(
            self.ours, request, workflow_id=workflow_id, task_queue=self.ours_queue
        )

    async def _ours_turn(self, n: int, k: int, latency_ms: float, chars: int) -> Any:
        return await start_turnkeeper_turn(self.ours, self.ours_queue, n * k, latency_ms)

    async def _floor_turn(self, n: int, k: int, latency_ms: float, chars: int) -> Any:
        return await start_floor_turn(self.floor, self.floor_queue, n * k, latency_ms)


async def run_shape(
    shapes: Shapes,
    shape: str,
    server_pid: int | None,
    n: int,
    k: int,
    latency_ms: float,
    chars: int,
) -> dict[str, Any]:
    """One run of `shape` from start to result: wall, CPU, and the parent's (and the whole
    tree's) history.

    Raises:
        RuntimeError: it did not finish in time (it is terminated) or did not play the script.
    """
    with Meter(server_pid) as meter:
        handle = await shapes.runner(shape)(n, k, latency_ms, chars)
        result = await result_within(handle, TURN_TIMEOUT_S, f"{shape}: {handle.id}")
    _check(shape, result, n, k)
    client = shapes.client(shape)
    parent = await _history_bytes(client, handle.id)
    children = [f"{handle.id}/{SUBAGENT_NAME}-{i + 1}" for i in range(n)] if "tree" in shape else []
    child_bytes = [await _history_bytes(client, child) for child in children]
    return {
        "wall_s": round(meter.wall_s, 3),
        "worker_cpu_s": round(meter.cpu_s, 3),
        "server_cpu_s": round(meter.server_cpu_s, 3),
        "parent_bytes": parent[0],
        "parent_events": parent[1],
        "tree_bytes": parent[0] + sum(size for size, _ in child_bytes),
    }


async def _history_bytes(client: Client, workflow_id: str) -> tuple[int, int]:
    handle = client.get_workflow_handle(workflow_id)
    described = await handle.describe()
    runs = await fetch_chain(client, workflow_id, described.run_id)
    events = [event for run in runs for event in run]
    return sum(event.ByteSize() for event in events), len(events)


def _check(shape: str, result: Any, n: int, k: int) -> None:
    if isinstance(result, AgentReport):
        children = result.subagents
        ok = result.outcome == "completed" and result.output == "done"
        if shape == OURS_TREE:
            ok = ok and len(children) == n and all(c.outcome == "completed" for c in children)
        else:
            ok = ok and result.tool_calls == n * k
    else:
        ok = result == "done"
    if not ok:
        raise RuntimeError(f"{shape} did not play the script: {str(result)[:300]}")


SHAPES = [FLOOR_TREE, OURS_TREE, OURS_TURN, FLOOR_TURN]


async def timed(shapes: Shapes, pid: int | None, args: argparse.Namespace) -> dict[str, Any]:
    """`--reps` runs of each shape at N, K, L and C, the order rotated from rep to rep."""
    names = SHAPES
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for rep in range(args.reps):
        order = names[rep % len(names) :] + names[: rep % len(names)]
        for shape in order:
            measured = await run_shape(
                shapes, shape, pid, args.n, args.k, args.latency_ms, args.output_chars
            )
            runs[shape].append(measured)
            progress(f"{shape} rep {rep}: {measured}")
    return {
        name: {
            **{
                figure: statistics.median(run[figure] for run in measured) for figure in measured[0]
            },
            "runs": measured,
        }
        for name, measured in runs.items()
    }


async def growth(shapes: Shapes, pid: int | None, args: argparse.Namespace) -> dict[str, Any]:
    """The parent's history at N/2 and N sub-agents with C-char outputs, and at N with 10 × C."""
    points = [(args.n // 2, args.output_chars), (args.n, args.output_chars)]
    points.append((args.n, args.output_chars * 10))
    result: dict[str, Any] = {"points": [list(point) for point in points]}
    for shape in (FLOOR_TREE, OURS_TREE):
        result[shape] = []
        for n, chars in points:
            measured = await run_shape(shapes, shape, pid, n, args.k, 0, chars)
            result[shape].append(measured["parent_bytes"])
            progress(f"growth {shape} n={n} out={chars}: {measured['parent_bytes']} B")
    return result


async def measure(args: argparse.Namespace, server: BenchServer) -> dict[str, Any]:
    data_dir = server.folder / "turnkeeper"
    floor = await Client.connect(server.address)
    ours = await Client.connect(server.address, data_converter=bench_data_converter(data_dir))
    floor_queue = f"bench-floor-tree-{uuid.uuid4().hex[:8]}"
    ours_queue = f"bench-turnkeeper-tree-{uuid.uuid4().hex[:8]}"
    shapes = Shapes(floor, ours, floor_queue, ours_queue)
    pid = server.server_pid
    provider = TreeBenchProvider()
    async with (
        floor_tree_worker(floor, floor_queue),
        turnkeeper_worker(ours, ours_queue, data_dir, provider=provider),
    ):
        for shape in SHAPES:  # the first run of a worker pays its imports
            await run_shape(shapes, shape, pid, 2, 1, 0, 10)
        progress("warm-up done")
        return {"timed": await timed(shapes, pid, args), "growth": await growth(shapes, pid, args)}


def render(results: dict[str, Any], args: argparse.Namespace) -> str:
    timed_, grown = results["timed"], results["growth"]
    names = list(timed_)
    figures = [
        ("wall s", "wall_s", 1.0),
        ("worker CPU s", "worker_cpu_s", 1.0),
        ("dev-server CPU s", "server_cpu_s", 1.0),
        ("parent history KiB", "parent_bytes", 1024.0),
        ("parent history events", "parent_events", 1.0),
        ("whole tree's history KiB", "tree_bytes", 1024.0),
    ]
    rows = []
    for label, key, scale in figures:
        values = {name: timed_[name][key] / scale for name in names}
        shown = "{:,.0f}" if key == "parent_events" else "{:,.2f}"
        row = [label, *(shown.format(values[name]) for name in names)]
        row.append(_ratio(values[OURS_TREE], values[FLOOR_TREE]))
        row.append(_ratio(values[OURS_TREE], values[OURS_TURN]))
        rows.append(row)
    ratios = ["tree ÷ floor tree", "tree ÷ one turn"]
    head = (
        f"{args.n} sub-agents × {args.k} tool calls against {args.n * args.k} tool calls in one "
        f"turn, L = {args.latency_ms:g} ms, child outputs of {args.output_chars} chars, median "
        f"of {args.reps}:"
    )
    parts = [head, markdown([["figure", *names, *ratios], *rows])]
    parts.append(_growth_table(grown))
    parts.append(f"Whole run {results['wall_s']:g} s.")
    return "\n\n".join(parts)


def _growth_table(grown: dict[str, Any]) -> str:
    (half, short), (n, _), (_, long) = grown["points"]
    sides = [FLOOR_TREE, OURS_TREE]
    rows = [
        [f"{half} sub-agents, {short}-char outputs", *(_kib(grown[s][0]) for s in sides)],
        [f"{n} sub-agents, {short}-char outputs", *(_kib(grown[s][1]) for s in sides)],
        [f"{n} sub-agents, {long}-char outputs", *(_kib(grown[s][2]) for s in sides)],
        [
            "bytes per added sub-agent call",
            *(f"{(grown[s][1] - grown[s][0]) / (n - half):,.0f} B" for s in sides),
        ],
        [
            "bytes per added output char, per sub-agent",
            *(f"{(grown[s][2] - grown[s][1]) / (n * (long - short)):.2f} B" for s in sides),
        ],
    ]
    return "Parent history, L = 0:\n\n" + markdown([["parent history", *sides], *rows])


def markdown(rows: list[list[str]]) -> str:
    """A markdown table whose first row is its header (figures right-aligned)."""
    header, *body = rows
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in body])


def _kib(size: int) -> str:
    return f"{size / 1024:,.1f} KiB"


def _ratio(ours: float, other: float) -> str:
    return f"{ours / other:.2f}×" if other else "—"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.subagents", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--n", type=int, default=10, help="sub-agent calls of the lead")
    parser.add_argument("--k", type=int, default=5, help="tool calls of each sub-agent")
    parser.add_argument("--latency-ms", type=float, default=50.0, help="of every model call")
    parser.add_argument("--output-chars", type=int, default=200, help="of each child's answer")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--log-level", default="WARNING", help="of the in-process workers")
    args = parser.parse_args(argv)
    if args.n < 2 or args.k < 1 or args.reps < 1 or args.output_chars < 1:
        parser.error("--n must be at least 2, --k, --reps and --output-chars at least 1")
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
    sys.stdout.write(render(results, args) + "\n")


if __name__ == "__main__":
    main()
