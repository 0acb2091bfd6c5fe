"""The ledger rows of the chaos matrix: turns billed to a tenant with a daily cap, on a
rate-limited model, so that every model call holds a reservation in the tenant's ledger
(`TenantLedgerWorkflow`) and a grant of the model's rate-limit ledger (`RateLimiterWorkflow`)
while a worker or the server is killed, and while both ledgers continue as new.

Besides the six properties of every turn (`properties.py`), each row checks its ledgers:

- no cap passed: from the moment the cap is set, the tenant's settled spend plus its
  reservations never exceed it (read with the ledger's `spend` query every `POLL_S`);
- no reservation leaked: after the run the ledger holds no reservation, and its settled spend is
  what the fake provider billed for the row's calls: each call in the turns' reports once, plus
  any of the calls billed beyond them (the call a fault struck, at most one per fault), which
  were settled only when the fault struck after the settlement;
- the window never exceeded: no `WINDOW_MS` holds more than `REQUESTS_PER_WINDOW` of the grants
  the rate-limit ledger admitted (its `window` query, read every `POLL_S`), and every call the
  provider billed had one;
- both ledgers continued as new during the row: the rate-limit ledger is started with a short
  history (`RateLimiterInput.max_history_events`, meant for benches), and the tenant's ledger,
  which continues after `MAX_HANDLED` updates, is brought that close first by updates of no cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import combinations
from typing import Any, Final

from temporalio.client import Client, RPCTimeoutOrCancelledError, WorkflowQueryFailedError
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError
from turnkeeper.contracts.errors import TURN_BUDGET_EXCEEDED
from turnkeeper.contracts.pricing import cost_usd, price_for
from turnkeeper.contracts.rate_limits import (
    QUERY_WINDOW,
    RATE_LIMITER_WORKFLOW,
    RATE_LIMITS_ENV,
    Grant,
    RateLimiterInput,
    rate_limiter_id,
)
from turnkeeper.contracts.tenants import (
    QUERY_SPEND,
    UPDATE_RESERVE,
    UPDATE_SETTLE,
    ReserveInput,
    ReserveResult,
    SettleInput,
    TenantCaps,
    TenantSpend,
    ledger_id,
)
from turnkeeper.contracts.turn import Usage
from turnkeeper.workflows.fleet.tenant_ledger_workflow import MAX_HANDLED

from bench.chaos.faults import FaultPlan, one_after_another, server_kills, worker_kills
from bench.chaos.matrix import Sizes, new_keys, run_row
from bench.chaos.properties import RowResult
from bench.chaos.stack import ChaosStack
from bench.chaos.workload import TurnRun, turn_request, turn_steps
from tests.fakes.fake_anthropic import BilledCall
from turnkeeper.client.tenants import set_caps
from turnkeeper.ground.tenant_ledger import ledger_update

# The rows' model, rate limited for the chaos workers (`worker_env`) and used by no other row.
LEDGER_MODEL: Final = "anthropic:claude-haiku-4-5"
# The rate-limit ledger's window, shorter than the 60 s of production so that a few turns fill
# it; far longer than a server outage and the workers' return after it (10 s once proved too
# short), so that the `window` query, read again after one, still shows every grant made before.
WINDOW_MS: Final = 20_000
REQUESTS_PER_WINDOW: Final = 6
# History events after which the row's rate-limit ledger continues as new: a few calls' worth.
RATE_LEDGER_EVENTS: Final = 60
# A small `max_tokens`, so that a call's reservation (its maximum cost) is near what it costs
# and the cap binds on spend, not on the reservations of calls in flight.
MAX_TOKENS: Final = 64
# The cap, set once a turn has completed, allows this share of what the open turns still need
# at that turn's cost per call: their last calls are refused, so the cap binds.
CAP_SHARE: Final = 0.8
# Tenant ledger updates the row's own calls make before the ledger continues as new, per turn:
# two per model call, four calls a turn; half of them, so it continues mid-row.
UPDATES_BEFORE_CONTINUE_PER_TURN: Final = 4
# Priming asks of the tenant's ledger in flight at once (`fresh_ledgers`).
PRIMING_AT_ONCE: Final = 4
POLL_S: Final = 0.5
RPC_TIMEOUT: Final = timedelta(seconds=2)
# What a look at a ledger may meet while the server or the worker running it is down.
UNANSWERED: Final = (RPCError, RPCTimeoutOrCancelledError, WorkflowQueryFailedError)
# Float sums of the ledger (rounded to 10 decimals) against the bench's own.
USD_TOLERANCE: Final = 1e-8
CALLS_PER_TURN: Final = 4


def worker_env() -> dict[str, str]:
    """The chaos workers' `TURNKEEPER_RATE_LIMITS`: the rows' model only. Its
    `requests_per_minute` counts per window of the ledger, which the rows shorten."""
    return {
        RATE_LIMITS_ENV: json.dumps({LEDGER_MODEL: {"requests_per_minute": REQUESTS_PER_WINDOW}})
    }


def ledger_request(tenant: str) -> Callable[[str], dict[str, Any]]:
    """The request of a row's turn: the matrix's turn, billed to `tenant`, on the rows' model."""

    def request(key: str) -> dict[str, Any]:
        body = turn_request(key)
        body["agent"] |= {"model": LEDGER_MODEL, "max_tokens": MAX_TOKENS}
        body["tenant"] = tenant
        return body

    return request


@dataclass
class LedgerWatch:
    """What the rows read from both ledgers while their turns run."""

    tenant: str
    cap_usd: float | None = None
    grants: dict[str, Grant] = field(default_factory=dict)
    tenant_runs: set[str] = field(default_factory=set)
    rate_runs: set[str] = field(default_factory=set)
    over_cap: list[str] = field(default_factory=list)

    async def look_at_window(self, client: Client) -> None:
        """Keeps every grant the rate-limit ledger's window shows, and its run."""
        key = rate_limiter_id(LEDGER_MODEL)
        window = await client.get_workflow_handle(key).query(
            QUERY_WINDOW, result_type=RateLimiterInput, rpc_timeout=RPC_TIMEOUT
        )
        self.rate_runs.add(await _run_id(client, key))
        for grant in window.grants:
            self.grants[grant.id] = grant

    async def look_at_tenant(self, stack: ChaosStack, runs: list[TurnRun]) -> None:
        """Checks the tenant's spend against its cap, and sets the cap once a turn has
        completed."""
        client = stack.client
        spend = await _spend(client, self.tenant)
        self.tenant_runs.add(await _run_id(client, ledger_id(self.tenant)))
        if self.cap_usd is not None and spend.spent_day_usd + spend.reserved_usd > (
            self.cap_usd + USD_TOLERANCE
        ):
            self.over_cap.append(
                f"spent ${spend.spent_day_usd:.6f} + reserved ${spend.reserved_usd:.6f} "
                f"over the cap of ${self.cap_usd:.6f}"
            )
        done = [run.report for run in runs if run.outcome == "completed" and run.report]
        if self.cap_usd is None and done:
            # What the open turns still need, at the first completed turn's cost per call.
            left = sum(
                max(0, CALLS_PER_TURN - len(stack.fake.billed_for(run.key)))
                for run in runs
                if run.closed_at is None
            )
            per_call = done[0].cost_usd / max(1, done[0].llm_calls)
            cap = spend.spent_day_usd + spend.reserved_usd + left * per_call * CAP_SHARE
            await set_caps(client, self.tenant, TenantCaps(usd_per_day=cap), stack.task_queue)
            self.cap_usd = cap


async def _spend(client: Client, tenant: str) -> TenantSpend:
    handle = client.get_workflow_handle(ledger_id(tenant))
    return await handle.query(QUERY_SPEND, result_type=TenantSpend, rpc_timeout=RPC_TIMEOUT)


async def _run_id(client: Client, workflow_id: str) -> str:
    description = await client.get_workflow_handle(workflow_id).describe(rpc_timeout=RPC_TIMEOUT)
    return description.run_id or ""


def watched(plan: FaultPlan, watch: LedgerWatch, bound_s: float) -> FaultPlan:
    """`plan`, with `watch` polling both ledgers until every turn has closed (or the bound)."""

    async def inject(stack: ChaosStack, runs: list[TurnRun], hits: Counter[str]) -> int:
        deadline = time.monotonic() + bound_s

        async def polling(look: Callable[[], Awaitable[None]]) -> None:
            while time.monotonic() < deadline and any(run.closed_at is None for run in runs):
                # The server is down, or no worker runs the ledger for a moment: look again.
                with contextlib.suppress(*UNANSWERED):
                    await look()
                await asyncio.sleep(POLL_S)

        # Each ledger in its own loop, so that one slow to answer (the tenant's, setting the cap
        # through an outage) never keeps the other's grants from being seen before they leave
        # the window.
        faults, *_ = await asyncio.gather(
            plan(stack, runs, hits),
            polling(lambda: watch.look_at_window(stack.client)),
            polling(lambda: watch.look_at_tenant(stack, runs)),
        )
        return faults

    return inject


async def fresh_ledgers(stack: ChaosStack, tenant: str, turns: int) -> None:
    """A new rate-limit ledger for the rows' model (short window, short history), and the
    tenant's ledger brought to a few updates before it continues as new, by reservations of
    no cost settled at once (calls that never reached the provider)."""
    await stack.client.start_workflow(
        RATE_LIMITER_WORKFLOW,
        RateLimiterInput(
            key=LEDGER_MODEL, window_ms=WINDOW_MS, max_history_events=RATE_LEDGER_EVENTS
        ),
        id=rate_limiter_id(LEDGER_MODEL),
        task_queue=stack.task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING,
    )
    pairs = (MAX_HANDLED - UPDATES_BEFORE_CONTINUE_PER_TURN * turns) // 2
    # A few at a time: a ledger takes its updates one after another, and hundreds sent at once
    # left the last waiting past the ask's 10-second timeout on a loaded machine.
    gate = asyncio.Semaphore(PRIMING_AT_ONCE)

    async def paced(n: int) -> None:
        async with gate:
            await _no_cost_call(stack, tenant, f"prime-{n}")

    await asyncio.gather(*(paced(n) for n in range(pairs)))


async def _no_cost_call(stack: ChaosStack, tenant: str, key: str) -> None:
    reserve = ReserveInput(tenant=tenant, key=key, amount_usd=0.0)
    await ledger_update(
        stack.client, tenant, stack.task_queue, UPDATE_RESERVE, reserve, ReserveResult
    )
    settle = SettleInput(key=key, cost_usd=0.0)
    await ledger_update(stack.client, tenant, stack.task_queue, UPDATE_SETTLE, settle, TenantSpend)


def _call_cost(call: BilledCall) -> float:
    price = price_for(LEDGER_MODEL)
    assert price is not None, f"{LEDGER_MODEL} has no price"
    return cost_usd(Usage(input_tokens=call.input_tokens, output_tokens=call.output_tokens), price)


def _counted_and_beyond(bills: list[BilledCall], counted: int) -> tuple[float, list[float]]:
    """The cost of the calls in a turn's report (each step's first bill, as `judge` counts
    them) and the costs of the calls billed beyond them."""
    first: dict[int | None, BilledCall] = {}
    beyond = []
    for call in bills:
        if call.step is not None and call.step < counted and call.step not in first:
            first[call.step] = call
        else:
            beyond.append(_call_cost(call))
    return sum(_call_cost(call) for call in first.values()), beyond


def spend_problems(spend: TenantSpend, turns: list[tuple[int, list[BilledCall]]]) -> list[str]:
    """Whether the ledger settled each billed call once and holds no reservation; `turns`:
    each turn's model calls in its report and the calls the fake provider billed for it."""
    problems = []
    if spend.in_flight or spend.reserved_usd > USD_TOLERANCE:
        problems.append(
            f"{spend.in_flight} reservation(s) of ${spend.reserved_usd:.6f} left in the ledger"
        )
    counted, beyond = 0.0, []
    for turn_counted, bills in turns:
        cost, turn_beyond = _counted_and_beyond(bills, turn_counted)
        counted += cost
        beyond += turn_beyond
    # Each call billed beyond the reports was settled or not (its worker died first): the spend
    # must be the reports' calls plus some of those, never a call twice or one never billed.
    sums = {sum(chosen) for size in range(len(beyond) + 1) for chosen in combinations(beyond, size)}
    if not any(abs(counted + extra - spend.spent_day_usd) <= USD_TOLERANCE for extra in sums):
        problems.append(
            f"the ledger's spend ${spend.spent_day_usd:.6f} is not what the provider billed: "
            f"${counted:.6f} for the reports' calls and {len(beyond)} more of "
            f"${sum(beyond):.6f}"
        )
    return problems


def window_problems(seen: list[Grant], billed: int) -> list[str]:
    """Whether any window held more of the grants `seen` than the limit, and whether each of
    the `billed` calls had a grant (else the `window` query missed some, and the check is
    blind)."""
    problems = []
    grants = sorted(seen, key=lambda grant: grant.at_ms)
    for index, grant in enumerate(grants):
        inside = [g for g in grants[: index + 1] if g.at_ms > grant.at_ms - WINDOW_MS]
        if len(inside) > REQUESTS_PER_WINDOW:
            problems.append(
                f"{len(inside)} grants in the {WINDOW_MS} ms before {grant.at_ms}, "
                f"over the limit of {REQUESTS_PER_WINDOW}"
            )
            break
    if len(grants) < billed:
        problems.append(f"{len(grants)} grants seen for {billed} calls billed")
    return problems


async def ledger_row(
    stack: ChaosStack,
    name: str,
    turns: int,
    plan: Callable[[], FaultPlan],
    faults: int,
    rng: random.Random,
) -> RowResult:
    """One ledger row: fresh ledgers, `turns` turns of a fresh tenant under `plan`, both
    ledgers watched, and the row's own properties judged."""
    tenant = f"chaos-{uuid.uuid4().hex[:8]}"
    await fresh_ledgers(stack, tenant, turns)
    watch = LedgerWatch(tenant)
    keyed = [(key, turn_steps(key, rng)) for key in new_keys(turns, "lg")]
    calls = turns * CALLS_PER_TURN
    bound_s = 90.0 * faults + 60 + calls * WINDOW_MS / 1000 / REQUESTS_PER_WINDOW
    result = await run_row(
        stack, name, keyed, watched(plan(), watch, bound_s), bound_s,
        stagger_s=3.0 * turns, rng=rng, request=ledger_request(tenant),
    )  # fmt: skip
    spend = await _spend(stack.client, tenant)
    turns_billed = [(v.counted, stack.fake.billed_for(v.key)) for v in result.verdicts]
    problems: list[str] = []
    problems += spend_problems(spend, turns_billed)
    billed = sum(len(bills) for _, bills in turns_billed)
    problems += window_problems(list(watch.grants.values()), billed)
    problems += watch.over_cap[:3]
    if watch.cap_usd is not None and spend.spent_day_usd > watch.cap_usd + USD_TOLERANCE:
        problems.append(f"spent ${spend.spent_day_usd:.6f} over the cap")
    for ledger, seen in (("tenant", watch.tenant_runs), ("rate-limit", watch.rate_runs)):
        if len(seen) < 2:
            problems.append(f"the {ledger} ledger did not continue as new")
        result.hits[f"{ledger} ledger continued as new"] += len(seen) - 1
    result.hits["refused at the cap"] += sum(
        verdict.outcome == TURN_BUDGET_EXCEEDED for verdict in result.verdicts
    )
    result.own_violations += [f"{result.fault}: {problem}" for problem in problems]
    return result


async def ledger_rows(stack: ChaosStack, sizes: Sizes, rng: random.Random) -> list[RowResult]:
    """The ledger row, sized from the matrix's: half its turns, and as many worker kills and
    server kills, one after the other, as its server-kill row has kills (one each at the quick
    size)."""
    turns, kills = max(3, sizes.turns // 2), sizes.server_kills

    def plan() -> FaultPlan:
        return one_after_another(
            [worker_kills(1, rng, ("model call",)), server_kills(1, rng, ("model call",))] * kills
        )

    return [
        await ledger_row(
            stack, "ledgers: worker and server kill -9 in model calls", turns, plan, 2 * kills, rng
        )
    ]
