"""`python -m bench.chaos [--quick] [--seed N] [--rows GROUPS]`: runs the matrix (or only some
groups of its rows), prints the table and every property that failed; exits 1 when one did."""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sys
import time
from collections.abc import Sequence

from bench.chaos.faults import PROVIDER_TIMEOUT_S
from bench.chaos.ledger_rows import worker_env as ledger_worker_env
from bench.chaos.matrix import GROUPS, Sizes, run_matrix
from bench.chaos.properties import RowResult
from bench.chaos.report import table
from bench.chaos.stack import chaos_stack

WORKERS = 2


async def run(quick: bool, seed: int, groups: Sequence[str] = ()) -> list[RowResult]:
    sizes = Sizes.quick() if quick else Sizes.full()
    async with chaos_stack() as stack:
        os.environ.update(ledger_worker_env())  # restored when the stack closes
        for _ in range(WORKERS):
            stack.add_worker(provider_timeout_s=PROVIDER_TIMEOUT_S)
        try:
            return await run_matrix(stack, sizes, seed, groups)
        finally:
            shutil.rmtree(stack.server.folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the CI size: a few minutes")
    parser.add_argument("--seed", type=int, default=None, help="the random seed (default: any)")
    parser.add_argument(
        "--rows",
        metavar="GROUPS",
        type=lambda text: text.split(","),
        default=[],
        help=f"only these groups of rows, comma-separated: {', '.join(GROUPS)} (default: all)",
    )
    args = parser.parse_args()
    if unknown := set(args.rows) - set(GROUPS):
        parser.error(
            f"--rows: no group {', '.join(sorted(unknown))}; the groups: {', '.join(GROUPS)}"
        )
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    started = time.monotonic()
    rows = asyncio.run(run(args.quick, seed, args.rows))
    print(f"chaos matrix ({'quick' if args.quick else 'full'}, seed {seed}, "
          f"{time.monotonic() - started:.0f} s)")  # fmt: skip
    print(table(rows))
    problems = [problem for row in rows for problem in row.violations()]
    for problem in problems:
        print(f"VIOLATED: {problem}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
