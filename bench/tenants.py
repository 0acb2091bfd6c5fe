"""Tenants' fair shares and caps on one worker: how much slower the light tenants' turns are among
many turns of one heavy tenant than alone (nine light tenants, a few turns each, on a worker with
few activity slots), with and without Temporal's fairness; and the worst overshoot of any
tenant's daily cap.

    python -m bench.tenants                         # 1,000 turns: 900 heavy, 9 light x 11
    python -m bench.tenants --heavy 270 --light 3   # reduced (what bench/README.md publishes)

Each turn is one model call of `--latency-ms` (the bench provider, in process) at Sonnet's price;
the worker has `--slots` activity slots, so the heavy tenant's calls make a backlog. Every turn
is started the way `turnkeeper.start_turn` starts it (its tenant as the fairness key). It runs on
two dev servers, Temporal's default matching (FIFO) and `matching.enableFairness=true` (what
`python worker.py --dev` runs), and prints one markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from temporalio.testing import WorkflowEnvironment
from turnkeeper.contracts.names import SEARCH_ATTRIBUTES
from turnkeeper.contracts.tenants import TenantCaps
from turnkeeper.contracts.turn import TurnRequest

from bench.fleet_parts import TurnTimes, run_turns
from bench.turnkeeper_side import bench_data_converter, turn_request, turnkeeper_worker
from tests.conftest import SA_KEYS, temporal_binary
from turnkeeper.client.tenants import set_caps, tenant_spend

FAIRNESS = ["--dynamic-config-value", "matching.enableFairness=true"]
ONE_PARTITION = [
    "--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
    "--dynamic-config-value", "matching.numTaskqueueWritePartitions=1",
]  # fmt: skip


def tenant_turn(tenant: str, latency_ms: float) -> TurnRequest:
    request = turn_request(0, latency_ms)
    agent = request.agent.model_copy(update={"max_tokens": 100})
    return request.model_copy(update={"tenant": tenant, "agent": agent})


async def _run_turns(client: Any, queue: str, turns: list[tuple[str, float]]) -> TurnTimes:
    """Starts every (tenant, latency) turn at once (`bench.fleet_parts.run_turns`)."""
    requests = [(tenant, tenant_turn(tenant, latency_ms)) for tenant, latency_ms in turns]
    return await run_turns(client, queue, requests)


async def scenario(args: argparse.Namespace, fair: bool) -> dict[str, Any]:
    extra = (FAIRNESS if fair else []) + ONE_PARTITION
    keys = [SA_KEYS[kind](name) for name, kind in SEARCH_ATTRIBUTES.items()]
    with tempfile.TemporaryDirectory() as tmp:
        converter = bench_data_converter(Path(tmp))
        env = await WorkflowEnvironment.start_local(
            data_converter=converter,
            dev_server_existing_path=temporal_binary("temporal"),
            dev_server_extra_args=extra,
            search_attributes=keys,
        )
        async with env:
            client, queue = env.client, f"tenants-{uuid.uuid4().hex[:8]}"
            worker = turnkeeper_worker(
                client, queue, Path(tmp), max_concurrent_activities=args.slots
            )
            async with worker:
                light = [f"light-{i}" for i in range(args.light_tenants)]
                # One call costs $0.0015 and reserves about $0.0026 (300 tokens in, 100 out at
                # most): the heavy tenant's cap stops about a fifth of its turns, late in the run.
                per_call = 0.0015
                heavy_cap = round(0.8 * args.heavy * per_call, 4)
                await set_caps(client, "heavy", TenantCaps(usd_per_day=heavy_cap), queue)
                for name in light:
                    await set_caps(client, name, TenantCaps(usd_per_day=1.0), queue)
                # Alone: each light tenant's turns with nothing else on the worker.
                alone: dict[str, list[float]] = {}
                for name in light:
                    run = await _run_turns(client, queue, [(name, args.latency_ms)] * args.light)
                    alone[name] = run.times[name]
                mixed_turns = [("heavy", args.latency_ms)] * args.heavy
                # The heavy tenant's backlog first, then the light tenants' turns behind it.
                for _ in range(args.light):
                    mixed_turns += [(name, args.latency_ms) for name in light]
                t0 = time.monotonic()
                mixed = await _run_turns(client, queue, mixed_turns)
                wall = time.monotonic() - t0
                overshoot = 0.0
                caps = {"heavy": heavy_cap, **{name: 1.0 for name in light}}
                spent = {}
                for name, cap in caps.items():
                    spend = await tenant_spend(client, name)
                    spent[name] = spend.spent_day_usd
                    overshoot = max(overshoot, spend.spent_day_usd - cap)
    return {
        "fair": fair,
        "alone": alone,
        "mixed": mixed,
        "wall_s": wall,
        "overshoot": overshoot,
        "spent": spent,
        "heavy_cap": heavy_cap,
    }


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        f"{args.heavy} turns of `heavy` + {args.light_tenants} light tenants x {args.light}; "
        f"one model call of {args.latency_ms:g} ms each; {args.slots} activity slots",
        "",
        "| matching | light tenants: median turn s mixed / alone (worst tenant) | heavy median s "
        "| wall s | heavy turns refused at cap | worst cap overshoot $ |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        ratios = []
        for name, alone in r["alone"].items():
            mixed = r["mixed"].times[name]
            ratios.append((_median(mixed) / _median(alone), _median(mixed), _median(alone), name))
        worst = max(ratios)
        light_mixed = _median([m for _, m, _, _ in ratios])
        light_alone = _median([a for _, _, a, _ in ratios])
        lines.append(
            f"| {'fairness' if r['fair'] else 'FIFO (default)'} "
            f"| {light_mixed:.2f} / {light_alone:.2f} (worst {worst[3]}: {worst[1]:.2f} / "
            f"{worst[2]:.2f}, x{worst[0]:.1f}) "
            f"| {_median(r['mixed'].times['heavy']):.2f} | {r['wall_s']:.1f} "
            f"| {r['mixed'].failed.get('heavy', 0)} of {args.heavy} (cap ${r['heavy_cap']:g}, "
            f"spent ${r['spent']['heavy']:.4f}) | {max(r['overshoot'], 0):.6f} |"
        )
    return "\n".join(lines)


async def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.tenants", description=__doc__)
    parser.add_argument("--heavy", type=int, default=900)
    parser.add_argument("--light-tenants", type=int, default=9)
    parser.add_argument("--light", type=int, default=11, help="turns of each light tenant")
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--slots", type=int, default=8, help="the worker's activity slots")
    args = parser.parse_args(argv)
    # Refused turns are the point here: their warnings (a traceback each) would bury the table.
    logging.getLogger("temporalio").setLevel(logging.CRITICAL)
    results = []
    for fair in (False, True):
        print(f"running with {'fairness' if fair else 'FIFO'} ...", file=sys.stderr)
        results.append(await scenario(args, fair))
    print(report(results, args))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
