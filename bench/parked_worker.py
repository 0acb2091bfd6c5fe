"""A worker alone in its process, so that its resident memory can be read from outside.

`python -m bench.parked_worker --side floor|turnkeeper --address HOST:PORT --task-queue Q
--data-dir DIR [worker flags]` prints `ready` once it polls, and stops when its stdin closes.
Each side imports only its own code: the floor's process is a bare Temporal worker.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from temporalio.client import Client
from temporalio.worker import Worker

from bench.options import add_worker_arguments, worker_options
from bench.scenario import FLOOR, OURS


async def _floor_worker(args: argparse.Namespace) -> Worker:
    from bench.floor import floor_worker

    return floor_worker(await Client.connect(args.address), args.task_queue)


async def _turnkeeper_worker(args: argparse.Namespace) -> Worker:
    from bench.turnkeeper_side import bench_data_converter, turnkeeper_worker
    from turnkeeper.worker.logging import configure_logging

    configure_logging("WARNING")
    data_dir = Path(args.data_dir)
    converter = bench_data_converter(data_dir, encrypt=args.encrypt)
    client = await Client.connect(args.address, data_converter=converter)
    provider = None
    if args.leak_kib_per_call:
        from bench.soak import LeakingProvider

        provider = LeakingProvider(args.leak_kib_per_call)
    return turnkeeper_worker(
        client,
        args.task_queue,
        data_dir,
        local_tool=args.local_tool,
        encrypt=args.encrypt,
        provider=provider,
        **worker_options(args),
    )


async def serve(args: argparse.Namespace) -> None:
    worker = await (_floor_worker(args) if args.side == FLOOR else _turnkeeper_worker(args))
    async with worker:
        print("ready", flush=True)
        # Until the parent closes our stdin (or dies).
        await asyncio.to_thread(sys.stdin.read)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.parked_worker")
    parser.add_argument("--side", choices=[FLOOR, OURS], required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument(
        "--leak-kib-per-call",
        type=int,
        default=0,
        help="keep this much memory for good at each model call (shows that bench.soak fails)",
    )
    add_worker_arguments(parser)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
