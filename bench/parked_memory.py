"""Where a parked turn's memory goes: `python -m bench.parked_memory [--side floor|turnkeeper]
[--n 300] [--k 0] [--warm-up 30] [--encrypt] [--tracemalloc] [--out FILE]`.

Runs one side's worker in this process on a fresh dev server, parks a few turns to warm it up
(imports, the sandbox, caches), then parks N more and reports what the N added, per turn:

- RSS (VmRSS) and the Python heap as the interpreter's allocator sees it (`sys.getallocatedblocks`
  is too coarse; with `--tracemalloc`, every allocation traced to its file, in categories);
- the objects that appeared, by type (count and shallow bytes; the garbage collector's objects
  only, so no str or bytes: tracemalloc and the deep sizes below count those);
- for our side, the deep size of each part of the workflow instances (the `Turn`, its transcript,
  the request, the workflow stream's backlog, the SDK's instance object), counted once each even
  when shared.

tracemalloc slows the worker and its traces cost memory of their own (the RSS figure of a
`--tracemalloc` run is not the worker's); run without it for RSS and object counts.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import sys
import time
import tracemalloc
import types
import uuid
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from temporalio.client import Client

from bench.activation_memory import first_activation_kept
from bench.floor import floor_worker
from bench.malloc import malloc_in_use, payload_malloc_bytes
from bench.parked import park_turns
from bench.server import BenchServer, rss_bytes
from bench.sides import FLOOR, OURS, floor_side, turnkeeper_side
from bench.turnkeeper_side import bench_data_converter, turnkeeper_worker
from turnkeeper.worker.logging import configure_logging

_SETTLE_S = 2.0
# Files of each category, by a fragment of their path (first match wins).
_CATEGORIES = (
    ("sandbox (temporalio/worker/workflow_sandbox)", "workflow_sandbox"),
    ("SDK workflow instance (temporalio/worker/_workflow_instance)", "_workflow_instance"),
    ("SDK worker, other (temporalio/worker)", "temporalio/worker"),
    ("workflow streams (temporalio/contrib)", "temporalio/contrib"),
    ("SDK converter (temporalio/converter)", "temporalio/converter"),
    ("SDK, other (temporalio)", "temporalio/"),
    ("protobuf", "google/protobuf"),
    ("pydantic", "pydantic"),
    ("turnkeeper workflows", "workflows/"),
    ("turnkeeper contracts", "contracts/"),
    ("turnkeeper, other", "turnkeeper/"),
    ("asyncio", "asyncio/"),
    ("import machinery", "<frozen importlib"),
)


def _category(filename: str) -> str:
    for name, fragment in _CATEGORIES:
        if fragment in filename:
            return name
    return f"other ({Path(filename).name})"


def deep_size(roots: Iterable[Any], seen: set[int]) -> int:
    """Bytes of everything reachable from `roots` that is not code, a type or a module, each
    object counted once across calls that share `seen`."""
    total = 0
    stack = list(roots)
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _SHARED):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj, 0)
        stack.extend(gc.get_referents(obj))
    return total


_SHARED = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.CodeType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
)


def _type_census() -> Counter[str]:
    counts: Counter[str] = Counter()
    for obj in gc.get_objects():
        counts[type(obj).__qualname__] += 1
    return counts


def _type_bytes() -> Counter[str]:
    sizes: Counter[str] = Counter()
    for obj in gc.get_objects():
        sizes[type(obj).__qualname__] += sys.getsizeof(obj, 0)
    return sizes


def _instances(name: str) -> list[Any]:
    return [obj for obj in gc.get_objects() if type(obj).__name__ == name]


def _parts_of_turns(n: int) -> dict[str, float]:
    """KiB per turn of each part of our workflow instances (shared parts counted once)."""
    workflows = [
        w for w in _instances("AgentTurnWorkflow") if getattr(w, "_turn", None) is not None
    ]
    if not workflows:
        return {}
    seen: set[int] = set()
    parts: dict[str, Any] = {
        "Turn.messages (the transcript)": [w._turn.messages for w in workflows],
        "Turn.unsent": [w._turn.unsent for w in workflows],
        "Turn.request": [w._turn.request for w in workflows],
        "Turn, the rest": [w._turn for w in workflows],
        "stream backlog (WorkflowStream._log)": [w._observer.view.stream._log for w in workflows],
        "TurnView and stream, the rest": [w._observer.view for w in workflows],
        "pending calls, tool calls, the rest of the instance": workflows,
    }
    sizes = {name: deep_size(roots, seen) for name, roots in parts.items()}
    impls = _instances("_WorkflowInstanceImpl")
    sizes["SDK _WorkflowInstanceImpl (all it reaches besides the above)"] = deep_size(impls, seen)
    count = len(workflows)
    result = {name: round(size / count / 1024, 2) for name, size in sizes.items()}
    result["instances"] = count
    result["SDK instances"] = len(impls)
    return result


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    server = BenchServer()
    try:
        async with server:
            return await _measure(args, server)
    finally:
        shutil.rmtree(server.folder, ignore_errors=True)


async def _measure(args: argparse.Namespace, server: BenchServer) -> dict[str, Any]:
    queue = f"bench-memory-{uuid.uuid4().hex[:8]}"
    data_dir = server.folder / "turnkeeper"
    if args.side == FLOOR:
        client = await Client.connect(server.address)
        side, worker = floor_side(client, queue), floor_worker(client, queue)
    else:
        converter = bench_data_converter(data_dir, encrypt=args.encrypt)
        client = await Client.connect(server.address, data_converter=converter)
        side = turnkeeper_side(client, queue)
        worker = turnkeeper_worker(client, queue, data_dir, encrypt=args.encrypt)
    async with worker:
        await park_turns(side, queue, args.warm_up, args.k)
        await asyncio.sleep(_SETTLE_S)
        if args.tracemalloc:
            tracemalloc.start(1)
        gc.collect()
        before = _snapshot(args)
        started = time.perf_counter()
        handles = await park_turns(side, queue, args.n, args.k)
        del handles  # the client's, not the worker's
        park_s = time.perf_counter() - started
        await asyncio.sleep(_SETTLE_S)
        gc.collect()
        after = _snapshot(args)
        result = _difference(before, after, args.n)
        result["park_s"] = round(park_s, 1)
        if args.side == OURS:
            result["parts_kib_per_turn"] = _parts_of_turns(args.n + args.warm_up)
    result["malloc_bytes_per_standalone_payload"] = payload_malloc_bytes()
    result["first_activation_malloc_bytes_per_run"] = first_activation_kept()
    return result


def _snapshot(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "rss": rss_bytes(os.getpid()),
        "malloc": malloc_in_use(),
        "blocks": sys.getallocatedblocks(),
        "types": _type_census(),
        "type_bytes": _type_bytes(),
        "traces": tracemalloc.take_snapshot() if args.tracemalloc else None,
    }


def _difference(before: dict[str, Any], after: dict[str, Any], n: int) -> dict[str, Any]:
    types_added = after["types"] - before["types"]
    bytes_added = after["type_bytes"] - before["type_bytes"]
    top = sorted(bytes_added.items(), key=lambda item: -item[1])[:20]
    result: dict[str, Any] = {
        "n": n,
        "rss_kib_per_turn": round((after["rss"] - before["rss"]) / n / 1024, 1),
        "malloc_in_use_kib_per_turn": round((after["malloc"] - before["malloc"]) / n / 1024, 1),
        "allocated_blocks_per_turn": round((after["blocks"] - before["blocks"]) / n),
        "gc_objects_per_turn": round(sum(types_added.values()) / n),
        "gc_objects_shallow_kib_per_turn": round(sum(bytes_added.values()) / n / 1024, 2),
        "types_per_turn": {
            name: {
                "objects": round(types_added[name] / n, 1),
                "shallow_bytes": round(size / n),
            }
            for name, size in top
        },
    }
    if after["traces"] is not None:
        result["traced"] = _traced(before["traces"], after["traces"], n)
    return result


def _traced(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, n: int) -> dict[str, Any]:
    by_category: Counter[str] = Counter()
    by_line: Counter[str] = Counter()
    for stat in after.compare_to(before, "lineno"):
        frame = stat.traceback[0]
        by_category[_category(frame.filename)] += stat.size_diff
        by_line[f"{frame.filename}:{frame.lineno}"] += stat.size_diff
    return {
        "kib_per_turn": round(sum(by_category.values()) / n / 1024, 2),
        "by_category_kib_per_turn": {
            name: round(size / n / 1024, 2) for name, size in by_category.most_common()
        },
        "top_lines_bytes_per_turn": {
            line: round(size / n) for line, size in by_line.most_common(25)
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.parked_memory")
    parser.add_argument("--side", choices=[FLOOR, OURS], default=OURS)
    parser.add_argument("--n", type=int, default=300, help="turns parked after the warm-up")
    parser.add_argument("--k", type=int, default=0, help="iterations before each turn parks")
    parser.add_argument("--warm-up", type=int, default=30, help="turns parked before measuring")
    parser.add_argument("--encrypt", action="store_true")
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--out", type=Path, help="write the JSON here (the SDK logs to stdout)")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    result = asyncio.run(measure(args))
    text = json.dumps(result, indent=2) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
