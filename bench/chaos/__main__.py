"""`python -m bench.chaos [--quick] [--seed N]`: runs the matrix, prints the table and every
property that failed; exits 1 when one did."""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sys
import time

from bench.chaos.faults import PROVIDER_TIMEOUT_S
from bench.chaos.ledger_rows import worker_env as ledger_worker_env
from bench.chaos.matrix import Sizes, run_matrix
from bench.chaos.properties import RowResult
from bench.chaos.report import table
from bench.chaos.stack import chaos_stack

WORKERS = 2


async def run(quick: bool, seed: int) -> list[RowResult]:
    sizes = Sizes.quick() if quick else Sizes.full()
    async with chaos_stack() as stack:
        os.environ.update(ledger_worker_env())  # restored when the stack closes
        for _ in range(WORKERS):
            stack.add_worker(provider_timeout_s=PROVIDER_TIMEOUT_S)
        try:
            return await run_matrix(stack, sizes, seed)
        finally:
            shutil.rmtree(stack.server.folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the CI size: a few minutes")
    parser.add_argument("--seed", type=int, default=None, help="the random seed (default: any)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    started = time.monotonic()
    rows = asyncio.run(run(args.quick, seed))
    print(f"chaos matrix ({'quick' if args.quick else 'full'}, seed {seed}, "
          f"{time.monotonic() - started:.0f} s)")  # fmt: skip
    print(table(rows))
    problems = [problem for row in rows for problem in row.violations()]
    for problem in problems:
        print(f"VIOLATED: {problem}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
