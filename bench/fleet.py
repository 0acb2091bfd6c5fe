"""`python -m bench.fleet`: rate limits shared by the fleet, tenants' fair shares and their
spend caps, measured together in one run against real `python worker.py` processes: whether the
provider sees more than the limit, how much slower the light tenants' turns are beside a heavy
tenant's backlog, and by how much a cap is overshot.

    .venv/bin/python -m bench.fleet                     # 1,000 turns, N=400, 1 then 3 workers
    .venv/bin/python -m bench.fleet --workers 1 --heavy 90 --light-turns 10   # a quick look

For each worker count, one sitting on a fresh dev server with fairness on (what `python worker.py
--dev` runs) and the fake Anthropic API of `turnkeeper/testing` answering 429 above `--rpm`
requests in any 60 s (`provider_rate_limit.py`); the workers run with
`TURNKEEPER_RATE_LIMITS={"anthropic:claude-sonnet-4-6": {"requests_per_minute": N}}`. Every turn
is one model call, started the way `turnkeeper.start_turn` starts it (its tenant the fairness key):

1. each light tenant alone, its turns at once (the limit does not bind: 12 calls);
2. the window of those calls passes (so the limit is whole again);
3. the mixed run: `--heavy` turns of `heavy`, then `--light-turns` shared by `--light-tenants`
   light tenants, all started at once. `heavy` has a daily cap of `--cap-share` of what its turns
   would cost (the cost of one call is measured in step 1), so the cap is reached mid-run and the
   rest of its turns fail with `TurnBudgetExceeded` before reaching the provider; each light
   tenant has a cap of $1 it never reaches.

Printed: the most requests the provider saw in any 60 s (at most N), its 429s after the first
minute (goal 0), each light tenant's median turn time mixed against alone, the worst overshoot
of any cap in dollars (settled spend less the cap), and the wall time of the mixed run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import platform
import shutil
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from temporalio.client import Client
from turnkeeper.contracts.rate_limits import WINDOW_MS
from turnkeeper.contracts.tenants import TenantCaps
from turnkeeper.contracts.turn import TurnRequest
from turnkeeper.workflows.fleet.rate_limiter_workflow import SLACK_FRACTION

from bench.fleet_parts import TurnTimes, run_turns, worker_processes
from bench.server import BenchServer
from bench.turnkeeper_side import bench_data_converter
from tests.fakes import fake_anthropic as anthropic
from tests.fakes.fake_anthropic import start_fake_anthropic
from tests.fakes.provider_rate_limit import ProviderRateLimit
from turnkeeper.client.tenants import set_caps, tenant_spend

MODEL = "anthropic:claude-sonnet-4-6"  # priced, so the tenants' caps count real dollars
SCRIPT = "fleet"
LIGHT_CAP_USD = 1.0


def fleet_turn(tenant: str) -> TurnRequest:
    """One model call (the fake answers `Done.`), billed to `tenant`."""
    return TurnRequest.model_validate(
        {
            "agent": {
                "id": "fleet",
                "model": MODEL,
                "system_prompt": anthropic.script_marker(SCRIPT),
                "max_tokens": 100,
            },
            "task": {"id": "fleet", "input": "Answer."},
            "tenant": tenant,
        }
    )


def light_counts(tenants: int, turns: int) -> list[int]:
    """`turns` shared by `tenants` as evenly as they go (100 by 9: one 12, eight 11)."""
    return [turns // tenants + (index < turns % tenants) for index in range(tenants)]


async def sitting(args: argparse.Namespace, workers: int) -> dict[str, Any]:
    """One worker count's run on a fresh server: the light tenants alone, then the mixed run."""
    server = BenchServer()
    try:
        async with server, start_fake_anthropic() as fake:
            # 60 of the 100 output tokens a call may use: the reservation (the maximum) is above
            # what a call costs, as with a real model.
            fake.script(SCRIPT, [anthropic.text("Done.", usage={"output_tokens": 60})])
            data_dir = server.folder / "turnkeeper"
            limits = {MODEL: {"requests_per_minute": args.rpm}}
            env = {
                "ANTHROPIC_BASE_URL": fake.base_url,
                "ANTHROPIC_API_KEY": "bench",
                "TURNKEEPER_RATE_LIMITS": json.dumps(limits),
                "AGENT_WORKSPACE": str(server.folder / "workspace"),
                "TURNKEEPER_DATA_DIR": str(data_dir),
            }
            queue = f"fleet-{uuid.uuid4().hex[:8]}"
            client = await Client.connect(
                server.address, data_converter=bench_data_converter(data_dir)
            )
            folder = server.folder / "workers"
            async with worker_processes(server.address, queue, folder, env, workers):
                return await _measure(args, client, queue, fake, workers)
    finally:
        shutil.rmtree(server.folder, ignore_errors=True)


async def _measure(
    args: argparse.Namespace, client: Client, queue: str, fake: Any, workers: int
) -> dict[str, Any]:
    light = [f"light-{index}" for index in range(args.light_tenants)]
    counts = dict(zip(light, light_counts(args.light_tenants, args.light_turns), strict=True))
    for name in light:
        await set_caps(client, name, TenantCaps(usd_per_day=LIGHT_CAP_USD), queue)
    fake.rate_limit = ProviderRateLimit(requests=args.rpm)
    # One turn first, so the first tenant's time alone does not pay the workers' warm-up (the
    # ledgers' first start, the SDK's first connection).
    await run_turns(client, queue, [("warm-up", fleet_turn("warm-up"))])
    alone: dict[str, list[float]] = {}
    for name in light:
        run = await run_turns(client, queue, [(name, fleet_turn(name))] * counts[name])
        alone[name] = run.times[name]
    first = await tenant_spend(client, light[0])
    per_call = first.spent_day_usd / counts[light[0]]
    heavy_cap = round(args.cap_share * args.heavy * per_call, 6)
    await set_caps(client, "heavy", TenantCaps(usd_per_day=heavy_cap), queue)
    # The alone runs' grants leave the ledger's window (the window and its slack) and the
    # provider's before the mixed run, so it starts with the whole limit: the busiest 60 s then
    # counts the mixed run's requests alone.
    await asyncio.sleep((WINDOW_MS + WINDOW_MS // SLACK_FRACTION) / 1000 + 1)
    fake.rate_limit = ProviderRateLimit(requests=args.rpm)
    turns = [("heavy", fleet_turn("heavy"))] * args.heavy
    # The heavy tenant's backlog first, then the light tenants' turns behind it, interleaved.
    for round_ in range(max(counts.values())):
        turns += [(name, fleet_turn(name)) for name in light if counts[name] > round_]
    began = time.monotonic()
    mixed = await run_turns(client, queue, turns)
    wall_s = time.monotonic() - began
    caps = {"heavy": heavy_cap, **{name: LIGHT_CAP_USD for name in light}}
    spent = {name: (await tenant_spend(client, name)).spent_day_usd for name in caps}
    limit = fake.rate_limit
    return {
        "workers": workers,
        "alone": alone,
        "mixed": mixed,
        "wall_s": wall_s,
        "per_call_usd": per_call,
        "heavy_cap": heavy_cap,
        "spent": spent,
        "overshoot_usd": max(spent[name] - cap for name, cap in caps.items()),
        "most_in_any_60s": limit.most_in_any_window(),
        "provider_calls": len(limit.admitted),
        "heavy_failed": mixed.failed.get("heavy", 0),
        "provider_429s": len(limit.refused),
        "provider_429s_after_first_minute": limit.refused_after(60.0),
    }


def _overshoot(usd: float) -> str:
    """The worst overshoot in dollars, or by how much the closest tenant stayed under its cap."""
    return f"${usd:.6f}" if usd > 0 else f"none (closest ${-usd:.4f} under)"


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    total = args.heavy + args.light_turns
    lines = [
        f"{total} one-call turns: `heavy` {args.heavy}, {args.light_tenants} light tenants "
        f"sharing {args.light_turns}; limit and provider {args.rpm} requests/min; "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
        f"{platform.python_version()}",
        "",
        "| workers | most requests in any 60 s (limit) | 429s (after the first minute) "
        "| light tenants: median turn s mixed / alone | worst light tenant mixed / alone "
        "| heavy refused at its cap | worst cap overshoot $ | wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        mixed: TurnTimes = r["mixed"]
        ratios = sorted(
            (_median(mixed.times[name]) / _median(alone), name, alone)
            for name, alone in r["alone"].items()
        )
        ratio, worst, worst_alone = ratios[-1]
        light_mixed = _median([t for name in r["alone"] for t in mixed.times[name]])
        light_alone = _median([t for times in r["alone"].values() for t in times])
        light_failed = sum(mixed.failed.get(name, 0) for name in r["alone"])
        lines.append(
            f"| {r['workers']} | {r['most_in_any_60s']} ({args.rpm}) "
            f"| {r['provider_429s']} ({r['provider_429s_after_first_minute']}) "
            f"| {light_mixed:.2f} / {light_alone:.2f} ({light_failed} failed) "
            f"| {worst}: {_median(mixed.times[worst]):.2f} / {_median(worst_alone):.2f} "
            f"(x{ratio:.1f}) "
            f"| {mixed.failed.get('heavy', 0)} of {args.heavy} (cap ${r['heavy_cap']:.4f}, "
            f"spent ${r['spent']['heavy']:.4f}) | {_overshoot(r['overshoot_usd'])} "
            f"| {r['wall_s']:.1f} |"
        )
    lines += ["", "Each light tenant, median turn s mixed / alone:", ""]
    for r in results:
        mixed = r["mixed"]
        each = ", ".join(
            f"{name} {_median(mixed.times[name]):.2f}/{_median(alone):.2f}"
            for name, alone in r["alone"].items()
        )
        lines.append(f"- {r['workers']} worker(s): {each}")
    return "\n".join(lines)


async def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__)
    parser.add_argument("--heavy", type=int, default=900, help="turns of the heavy tenant")
    parser.add_argument("--light-tenants", type=int, default=9)
    parser.add_argument("--light-turns", type=int, default=100, help="shared by light tenants")
    parser.add_argument("--rpm", type=int, default=400, help="the limit and the provider's")
    parser.add_argument(
        "--cap-share", type=float, default=0.8, help="heavy's daily cap, of its turns' cost"
    )
    parser.add_argument("--workers", default="1,3", help="worker counts, one sitting each")
    args = parser.parse_args(argv)
    # Refused turns are part of the run: their warnings would bury the table.
    logging.getLogger("temporalio").setLevel(logging.CRITICAL)
    results = []
    for workers in (int(count) for count in args.workers.split(",")):
        print(f"{workers} worker(s) ...", file=sys.stderr)
        results.append(await sitting(args, workers))
        print(report(results[-1:], args), file=sys.stderr)
        figures = {k: v for k, v in results[-1].items() if k not in ("alone", "mixed")}
        print(figures, file=sys.stderr)
    print(report(results, args))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
