"""The rows of the chaos matrix: each starts its turns, injects its faults (`faults.py`) while
they run, and judges every turn (`properties.py`).

Rows share one stack (server, workers, S3 store, the fake provider) and run one after the other,
so that one row's fault never lands in another's figures; only the scripted provider faults,
which strike their own turns alone, run side by side.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from bench.chaos.eval_rows import eval_rows
from bench.chaos.faults import (
    PROVIDER_TIMEOUT_S,
    FaultPlan,
    mcp_fault_calls,
    network_cuts,
    no_faults,
    provider_fault_replies,
    provider_refusals,
    rolling_restarts,
    scripted_faults,
    server_kills,
    store_outages,
    worker_kills,
)
from bench.chaos.properties import RowResult, judge
from bench.chaos.session_rows import session_rows
from bench.chaos.stack import ChaosStack
from bench.chaos.subagent_rows import subagent_rows, until_polling
from bench.chaos.workload import TurnRun, drive, start_turn, turn_steps
from tests.fakes.fake_anthropic import Step

ROLLING_WORKERS = 3
# What `--rows` chooses from: single turns, sub-agent trees, sessions, evaluation runs, the tenant
# and rate-limit ledgers, the HTTP API.
GROUPS = ("turn", "subagent", "session", "eval", "ledger", "http")


@dataclass(frozen=True)
class Sizes:
    """How much each row does; `--quick` is the CI size."""

    turns: int
    worker_kills: int
    server_kills: int
    network_cuts: int
    cut_s: tuple[float, float]
    provider_repeats: int
    store_cuts: int
    rolling_turns: int  # 0: no rolling-restart row

    @classmethod
    def quick(cls) -> Sizes:
        return cls(
            turns=6,
            worker_kills=4,
            server_kills=1,
            network_cuts=1,
            cut_s=(5, 8),
            provider_repeats=1,
            store_cuts=1,
            rolling_turns=0,
        )

    @classmethod
    def full(cls) -> Sizes:
        return cls(
            turns=20,
            worker_kills=10,
            server_kills=3,
            network_cuts=3,
            cut_s=(5, 30),
            provider_repeats=3,
            store_cuts=3,
            rolling_turns=300,
        )


async def run_row(
    stack: ChaosStack,
    fault: str,
    keys_and_steps: list[tuple[str, list[Step]]],
    inject: FaultPlan,
    bound_s: float,
    *,
    stream: bool = False,
    stagger_s: float = 0.0,
    rng: random.Random | None = None,
    needs_outage_sends: bool = False,
    extra_tools: Sequence[str] = (),
    needs_first_tool_error: bool = False,
    request: Callable[[str], dict[str, Any]] | None = None,
    approvals_elsewhere: bool = False,
) -> RowResult:
    """Runs one row's turns to their end (or the bound) while `inject` strikes. Turns start
    spread over `stagger_s`, so that faults keep meeting turns in every phase. `request` builds
    a turn's request from its key (default `turn_request`); with `approvals_elsewhere` the
    row's own clients decide the approvals (`TurnRun.approvals_elsewhere`)."""
    for key, steps in keys_and_steps:
        stack.fake.script(key, steps)
    started = time.monotonic()
    runs = [
        TurnRun(key, f"chaos-{key}", approvals_elsewhere=approvals_elsewhere)
        for key, _ in keys_and_steps
    ]
    hits: Counter[str] = Counter()
    deadline = started + bound_s
    delays = [(rng or random).uniform(0, stagger_s) for _ in runs]
    # Hundreds of callers looking every 0.3 s would load the server more than the faults do.
    poll_s = max(0.3, len(runs) / 40)

    async def one(run: TurnRun, delay: float) -> None:
        await asyncio.sleep(delay)
        body = request(run.key) if request else None
        await start_turn(stack.client, stack.task_queue, run.key, stream, extra_tools, body)
        await drive(stack.client, run, deadline, poll_s)

    injected, *_ = await asyncio.gather(
        inject(stack, runs, hits),
        *(one(run, delay) for run, delay in zip(runs, delays, strict=True)),
    )
    ledger = stack.ledger_lines()
    verdicts = [judge(run, stack.fake, ledger) for run in runs]
    wall_s = time.monotonic() - started
    return RowResult(
        fault, bound_s, injected, verdicts, hits, wall_s, needs_outage_sends, needs_first_tool_error
    )


def new_keys(count: int, prefix: str) -> list[str]:
    return [f"{prefix}{uuid.uuid4().hex[:8]}" for _ in range(count)]


async def run_matrix(
    stack: ChaosStack, sizes: Sizes, seed: int, groups: Collection[str] = ()
) -> list[RowResult]:
    """Every row, one group after the other; only those of `groups` (of `GROUPS`) if given."""
    rng = random.Random(seed)
    rows = await turn_rows(stack, sizes, rng) if not groups or "turn" in groups else []
    if groups and "turn" not in groups:
        # Without the baseline row, which waits for both workers to poll, a first row's ledger
        # asks waited for a worker still starting, past their 10-second timeout.
        for worker in stack.workers:
            await until_polling(stack, worker, within_s=120.0)
    # Rows of their own shape, sized by their own modules (quick or full, as this run is).
    quick = sizes == Sizes.quick()
    if not groups or "subagent" in groups:
        rows += await subagent_rows(stack, quick, rng)
    if not groups or "session" in groups:
        rows += await session_rows(stack, quick, rng)
    if not groups or "eval" in groups:
        rows += await eval_rows(stack, quick, rng)
    # Imported here: these rows' modules build on `run_row` below.
    from bench.chaos.http_rows import http_rows
    from bench.chaos.ledger_rows import ledger_rows

    if not groups or "ledger" in groups:
        rows += await ledger_rows(stack, sizes, rng)
    if not groups or "http" in groups:
        rows += await http_rows(stack, sizes, rng)
    return rows


async def turn_rows(stack: ChaosStack, sizes: Sizes, rng: random.Random) -> list[RowResult]:
    """The rows of single turns: every phase of a turn under every fault."""

    def plain(prefix: str) -> list[tuple[str, list[Step]]]:
        return [(key, turn_steps(key, rng)) for key in new_keys(sizes.turns, prefix)]

    rows = [
        # First, and without faults: it also waits until both workers poll.
        await run_row(stack, "none (baseline)", plain("bl"), no_faults, bound_s=120.0),
        await run_row(
            stack, "worker kill -9, restart 0-5 s", plain("wk"),
            worker_kills(sizes.worker_kills, rng), bound_s=60.0 * sizes.worker_kills + 60,
            stagger_s=5.0 * sizes.worker_kills, rng=rng,
        ),
        await run_row(
            stack, "server kill -9, restart same SQLite", plain("sk"),
            server_kills(sizes.server_kills, rng), bound_s=90.0 * sizes.server_kills + 60,
            stagger_s=6.0 * sizes.server_kills, rng=rng, needs_outage_sends=True,
        ),
        await run_row(
            stack, "network cut worker-server", plain("nc"),
            network_cuts(sizes.network_cuts, sizes.cut_s, rng),
            bound_s=(sizes.cut_s[1] + 60) * sizes.network_cuts + 60,
            stagger_s=(sizes.cut_s[1] + 3) * sizes.network_cuts, rng=rng,
        ),
    ]  # fmt: skip
    # Scripted provider faults strike only their own turns, so these rows run side by side.
    scripted = [
        run_row(
            stack, f"provider: {name}",
            [(key, turn_steps(key, rng, fault)) for key in new_keys(sizes.provider_repeats, "pf")],
            scripted_faults("model call"), bound_s=120.0, stream=name.startswith("stream"),
        )
        for name, fault in provider_fault_replies().items()
    ]  # fmt: skip
    # So do MCP servers failing: each turn's first tool call goes to the MCP server instead.
    scripted += [
        run_row(
            stack, f"MCP server: {name}",
            [
                (key, turn_steps(key, rng, first_call=call))
                for key in new_keys(sizes.provider_repeats, "mc")
            ],
            scripted_faults("tool call"), bound_s=120.0, extra_tools=[call[0]],
            needs_first_tool_error=True,
        )
        for name, call in mcp_fault_calls().items()
    ]  # fmt: skip
    rows += await asyncio.gather(*scripted)
    rows.append(
        await run_row(
            stack, "provider: connection refused", plain("pr"), provider_refusals(rng),
            bound_s=120.0, stagger_s=3.0, rng=rng,
        )
    )  # fmt: skip
    rows.append(
        await run_row(
            stack, "content store (S3) refuses connections 3-8 s", plain("cs"),
            store_outages(sizes.store_cuts, rng), bound_s=60.0 * sizes.store_cuts + 90,
            stagger_s=5.0 * sizes.store_cuts, rng=rng,
        )
    )  # fmt: skip
    if sizes.rolling_turns:
        while len(stack.workers) < ROLLING_WORKERS:
            stack.add_worker(provider_timeout_s=PROVIDER_TIMEOUT_S)
        keyed = [(key, turn_steps(key, rng)) for key in new_keys(sizes.rolling_turns, "rr")]
        rows.append(
            await run_row(
                stack, f"rolling restart of {ROLLING_WORKERS} workers on S3", keyed,
                rolling_restarts(2, rng), bound_s=900.0, stagger_s=60.0, rng=rng,
            )
        )  # fmt: skip
    return rows
