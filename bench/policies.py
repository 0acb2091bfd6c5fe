"""`python -m bench.policies`: what checking every tool call against a Cedar policy set costs the
worker. The same scripted turn of K iterations (model → `fetch_blob`) runs without
`agent.policy` and with `agent.policy: {"mode": "enforce"}` on a worker whose policy file holds
50 rules (a baseline permit, and 49 forbids and asks on other tools, inputs, tenants and hours
that this turn's calls never match, so each call is evaluated against all of them and runs).

The figure is this process's CPU time (the in-process worker and the client that starts the
turn; the dev server runs apart) per iteration, the median over `--reps` turns of each arm run
alternately; the ratio is the policy arm's over the plain arm's (the issue's goal: ≤ 1.05×).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client
from turnkeeper.contracts.turn import AgentReport, TurnRequest

from bench.scenario import TOOL_NAME
from bench.sections import progress
from bench.server import BenchServer, machine
from bench.turnkeeper_side import (
    bench_data_converter,
    check_report,
    turn_request,
    turnkeeper_worker,
)
from turnkeeper.worker.logging import configure_logging

PLAIN, CHECKED = "no agent.policy", "50-rule policy"


def fifty_rules() -> str:
    """A baseline permit and 49 rules that the bench turn's calls never match."""
    rules = ['@id("baseline")\npermit(principal, action == Action::"call", resource);']
    for n in range(49):
        kind = n % 4
        if kind == 0:
            rule = f'forbid(principal, action, resource == Tool::"tool_{n}");'
        elif kind == 1:
            rule = (
                f'forbid(principal, action, resource == Tool::"{TOOL_NAME}")\n'
                f"when {{ context.input has i && context.input.i > {100_000 + n} }};"
            )
        elif kind == 2:
            rule = (
                f'@effect("ask")\npermit(principal, action, resource == Tool::"pay_{n}")\n'
                f"when {{ context.input has amount && context.input.amount > {n} }};"
            )
        else:
            rule = (
                f'forbid(principal, action, resource)\nwhen {{ principal.tenant == "t{n}" && '
                f"context.hour >= 0 }};"
            )
        rules.append(f'@id("rule-{n}")\n{rule}')
    return "\n\n".join(rules) + "\n"


async def one_turn(client: Client, queue: str, k: int, checked: bool) -> tuple[float, AgentReport]:
    """Runs one turn; this process's CPU seconds while it ran, and its report."""
    from turnkeeper.client.turns import start_turn_workflow

    fields = turn_request(k, 0).model_dump(mode="json", exclude_defaults=True)
    if checked:
        fields["agent"]["policy"] = {"mode": "enforce"}
    request = TurnRequest.model_validate(fields)
    before = time.process_time()
    handle = await start_turn_workflow(
        client, request, workflow_id=f"policy-bench-{uuid.uuid4().hex[:10]}", task_queue=queue
    )
    report = await handle.result()
    return time.process_time() - before, report


async def measure(args: argparse.Namespace, server: BenchServer) -> dict[str, Any]:
    data_dir = server.folder / "worker"
    policy_file = server.folder / "fifty.cedar"
    policy_file.write_text(fifty_rules())
    client = await Client.connect(server.address, data_converter=bench_data_converter(data_dir))
    queue = f"policy-bench-{uuid.uuid4().hex[:8]}"
    per_iteration: dict[str, list[float]] = {PLAIN: [], CHECKED: []}
    async with turnkeeper_worker(client, queue, data_dir, policy_files=(policy_file,)):
        await one_turn(client, queue, 2, True)  # warm-up: imports, sandbox, caches
        await one_turn(client, queue, 2, False)
        for rep in range(args.reps):
            for arm, checked in ((PLAIN, False), (CHECKED, True)):
                cpu_s, report = await one_turn(client, queue, args.k, checked)
                check_report(report, args.k)
                decided = len(report.policy_decisions)
                if decided != (args.k if checked else 0):
                    raise RuntimeError(f"{arm}: {decided} policy decisions for {args.k} calls")
                per_iteration[arm].append(cpu_s / args.k)
                progress(f"rep {rep + 1} {arm}: {cpu_s / args.k * 1000:.2f} ms CPU/iteration")
    plain = statistics.median(per_iteration[PLAIN])
    checked_ms = statistics.median(per_iteration[CHECKED])
    return {
        "k": args.k,
        "reps": args.reps,
        "rules": 50,
        "cpu_ms_per_iteration": {
            PLAIN: round(plain * 1000, 3),
            CHECKED: round(checked_ms * 1000, 3),
        },
        "ratio": round(checked_ms / plain, 3),
    }


def render(results: dict[str, Any]) -> str:
    rows = results["cpu_ms_per_iteration"]
    lines = ["| arm | worker CPU per iteration |", "|---|---|"]
    lines += [f"| {arm} | {ms:.2f} ms |" for arm, ms in rows.items()]
    lines.append(f"\nratio {results['ratio']:.3f}× (K={results['k']}, {results['reps']} reps)")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.policies", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--k", type=int, default=20, help="iterations (tool calls) per turn")
    parser.add_argument("--reps", type=int, default=5, help="turns of each arm")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--log-level", default="WARNING", help="of the in-process worker")
    args = parser.parse_args(argv)
    if args.k < 1 or args.reps < 1:
        parser.error("--k and --reps must be at least 1")
    return args


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    server = BenchServer()
    try:
        async with server:
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
    sys.stdout.write(render(results) + "\n")


if __name__ == "__main__":
    main()
