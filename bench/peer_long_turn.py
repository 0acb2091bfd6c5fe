"""One long turn on a peer of the peers' harness, run in the peers' virtualenv.

    PEERS_PYTHON -m bench.peer_long_turn --peers DIR --peer LABEL --k K --result-bytes N
        --address HOST:PORT [--timeout-s S]

`bench.long_history` starts this from the repository's root with the peers' interpreter: the
peers need frameworks we do not depend on. It imports the harness's own module for the peer
from `--peers` (nothing of it is copied here), makes the harness's tool result `--result-bytes`
long (the harness fixes it at 2 KiB; the tool reads it at each call), runs one warm-up turn and
then one turn of K tool calls at L = 0 on a worker in this process, and prints one JSON line:
the figures of `bench.history_figures` (the same code that counts our side), its wall time and
how it ended.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
import time
import uuid
from types import ModuleType
from typing import Any

from bench.history_figures import chain_figures, outcome
from bench.scenario import make_blob

# Each peer's label (the harness's) -> its harness module and the flags its `make_peer` reads.
PEERS: dict[str, tuple[str, dict[str, str]]] = {
    "bare-temporal": ("bench_floor", {}),
    "pydantic-ai/temporal-agent": ("bench_pydantic_ai", {"variant": "temporal-agent"}),
    "pydantic-ai/durability": ("bench_pydantic_ai", {"variant": "durability"}),
    "openai-agents/inproc": ("bench_openai_agents", {"model": "inproc"}),
    "openai-agents/http": ("bench_openai_agents", {"model": "http"}),
}


def _harness(peers_dir: str, label: str, result_bytes: int) -> tuple[ModuleType, Any]:
    """The harness's shared module, with its tool result resized, and the peer's adapter."""
    sys.path.insert(0, peers_dir)
    common = importlib.import_module("common")
    common.BLOB = make_blob(result_bytes)
    common.BLOB_SIZE = result_bytes
    module_name, flags = PEERS[label]
    module = importlib.import_module(module_name)
    return common, module.make_peer(argparse.Namespace(**flags))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from temporalio.worker import Worker

    common, peer = _harness(args.peers, args.peer, args.result_bytes)
    client = await common.connect(args.address, **peer.client_kwargs())
    queue = f"long-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=queue, **peer.worker_kwargs()):
        # The first turn of a worker pays imports and the sandbox's set-up; not counted.
        warm = await peer.start_turn(client, queue, f"warm-{uuid.uuid4().hex[:8]}", 2, 0.0)
        await warm.result()
        started = time.perf_counter()
        handle = await peer.start_turn(client, queue, f"long-{uuid.uuid4().hex[:8]}", args.k, 0.0)
        ended = await outcome(handle, args.timeout_s)
        wall_s = time.perf_counter() - started
    history = await handle.fetch_history()
    return {
        "peer": args.peer,
        "outcome": ended,
        "wall_s": round(wall_s, 1),
        **chain_figures([list(history.events)], peer.is_model_activity),
        "versions": common.package_versions(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.peer_long_turn")
    parser.add_argument("--peers", required=True, help="the peers' harness folder")
    parser.add_argument("--peer", required=True, choices=sorted(PEERS))
    parser.add_argument("--k", type=int, required=True, help="tool calls (K + 1 model calls)")
    parser.add_argument("--result-bytes", type=int, required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--timeout-s", type=float, default=900.0)
    args = parser.parse_args()
    sys.stdout.write(json.dumps(asyncio.run(run(args))) + "\n")


if __name__ == "__main__":
    main()
