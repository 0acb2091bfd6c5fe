"""The faults of the chaos matrix, and how each finds its moment: a fault aimed at a phase waits
(briefly) until a live turn is in it, so that even a short run hits model calls, tool calls,
approval waits and external-result waits in flight.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError
from turnkeeper.contracts.search_attributes import TURN_STATE

from bench.chaos.stack import ChaosStack, WorkerProcess
from bench.chaos.workload import TurnRun, send_waiting
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import Step

# The provider timeout of the chaos workers: "slower than the timeout" replies take longer.
PROVIDER_TIMEOUT_S = 4.0

FaultPlan = Callable[[ChaosStack, list[TurnRun], Counter[str]], Awaitable[int]]


PHASES = ("model call", "tool call", "approval wait", "external wait")


@dataclass(frozen=True)
class Phase:
    name: str  # one of PHASES, or "between steps"
    worker_pid: int | None = None  # the process running the call in flight


async def phases(stack: ChaosStack, runs: list[TurnRun]) -> dict[str, Phase]:
    """What each live turn is doing, and in which worker process its call runs."""
    found: dict[str, Phase] = {}
    for run in runs:
        try:
            description = await stack.client.get_workflow_handle(run.workflow_id).describe()
        except RPCError:
            continue
        if description.status != WorkflowExecutionStatus.RUNNING:
            continue
        state = description.typed_search_attributes.get(TURN_STATE)
        calls = {
            a.activity_type.name: a.last_worker_identity
            for a in description.raw_description.pending_activities
        }
        if "model_call" in calls or "tool_call" in calls:
            name = "model call" if "model_call" in calls else "tool call"
            identity = calls.get("model_call") or calls.get("tool_call") or ""
            pid = identity.split("@")[0]
            found[run.key] = Phase(name, int(pid) if pid.isdigit() else None)
        elif state == "awaiting_approval":
            found[run.key] = Phase("approval wait")
        elif state == "awaiting_external":
            found[run.key] = Phase("external wait")
        else:
            found[run.key] = Phase("between steps")
    return found


async def aim(
    stack: ChaosStack, runs: list[TurnRun], targets: tuple[str, ...], within_s: float = 8.0
) -> dict[str, Phase]:
    """Waits (at most `within_s`) until a live turn is in one of `targets`, so that the faults
    of a short run still land in every phase; returns the phases at that moment."""
    deadline = time.monotonic() + within_s
    while True:
        now = await phases(stack, runs)
        if any(phase.name in targets for phase in now.values()) or time.monotonic() > deadline:
            return now
        await asyncio.sleep(0.1)


def _tally(hits: Counter[str], now: dict[str, Phase], victim_pid: int | None = None) -> None:
    for phase in now.values():
        elsewhere = phase.worker_pid is not None and victim_pid not in (None, phase.worker_pid)
        hits["call on the other worker" if elsewhere else phase.name] += 1


def aimed_victim(
    stack: ChaosStack, now: dict[str, Phase], target: str, rng: random.Random
) -> WorkerProcess:
    """The worker running a call in `target`, or any worker when no call names one (a wait
    runs nowhere: any worker may hold it in its cache)."""
    pids = [p.worker_pid for p in now.values() if p.name == target and p.worker_pid]
    by_pid = {w.process.pid: w for w in stack.workers if w.process is not None}
    victim = by_pid.get(pids[0]) if pids else None
    return victim or rng.choice(stack.workers)


def worker_kills(count: int, rng: random.Random, targets: tuple[str, ...] = PHASES) -> FaultPlan:
    """kill -9 of the worker running a call (or holding a waiting turn), aimed at each phase of
    `targets` in turn, restarted after 0-5 s."""

    async def inject(stack: ChaosStack, runs: list[TurnRun], hits: Counter[str]) -> int:
        for strike in range(count):
            await asyncio.sleep(rng.uniform(0.5, 2.0))
            target = targets[strike % len(targets)]
            now = await aim(stack, runs, (target,))
            victim = aimed_victim(stack, now, target, rng)
            _tally(hits, now, victim.process.pid if victim.process else None)
            victim.kill()
            await asyncio.sleep(rng.uniform(0.0, 5.0))
            victim.start()
        return count

    return inject


def server_kills(
    count: int, rng: random.Random, targets: tuple[str, ...] = ("approval wait", "external wait")
) -> FaultPlan:
    """kill -9 of the server while turns are in one of `targets` (by default waiting for a
    human); the callers of waiting turns decide during the outage and retry until the restarted
    server takes the decision."""

    async def inject(stack: ChaosStack, runs: list[TurnRun], hits: Counter[str]) -> int:
        for _ in range(count):
            await asyncio.sleep(rng.uniform(0.5, 2.0))
            for run in runs:
                run.held = True  # from now on this fault sends their decisions, in the outage
            now = await aim(stack, runs, targets, within_s=15.0)
            _tally(hits, now)
            waiting = [run for run in runs if run.key in now and now[run.key].name.endswith("wait")]
            await stack.kill_server()
            sends = [
                asyncio.create_task(
                    send_waiting(stack.client, run, now[run.key].name == "approval wait")
                )
                for run in waiting
            ]
            await asyncio.sleep(rng.uniform(2.0, 5.0))
            await stack.start_server()
            await asyncio.gather(*sends)
            for run in runs:
                run.held = False
        return count

    return inject


def network_cuts(count: int, seconds: tuple[float, float], rng: random.Random) -> FaultPlan:
    async def inject(stack: ChaosStack, runs: list[TurnRun], hits: Counter[str]) -> int:
        for _ in range(count):
            await asyncio.sleep(rng.uniform(1.0, 4.0))
            _tally(hits, await aim(stack, runs, PHASES[:2]))
            await stack.server_link.cut(rng.uniform(*seconds))
        return count

    return inject


def provider_refusals(rng: random.Random) -> FaultPlan:
    """The provider's host is down for a few seconds: connections refused."""

    async def inject(stack: ChaosStack, runs: list[TurnRun], hits: Counter[str]) -> int:
        await asyncio.sleep(rng.uniform(0.5, 2.0))
        _tally(hits, await aim(stack, runs, ("model call",)))
        await stack.provider_link.cut(3.0, refuse=True)
        return 1

    return inject


def store_outages(count: int, rng: random.Random) -> FaultPlan:
    """The S3 content store refuses connections for 3-8 s."""

    async def inject(stack: ChaosStack, runs: list[TurnRun], hits: Counter[str]) -> int:
        for _ in range(count):
            await asyncio.sleep(rng.uniform(1.0, 4.0))
            _tally(hits, await aim(stack, runs, PHASES[:2]))
            await stack.store_link.cut(rng.uniform(3.0, 8.0), refuse=True)
        return count

    return inject


def rolling_restarts(rounds: int, rng: random.Random) -> FaultPlan:
    """A deploy's rolling restart: each worker in turn gets SIGTERM and is replaced, the next
    one only once the replacement has had time to start polling."""

    async def inject(stack: ChaosStack, runs: list[TurnRun], hits: Counter[str]) -> int:
        restarts = 0
        for _ in range(rounds):
            for worker in list(stack.workers):
                await asyncio.sleep(rng.uniform(3.0, 6.0))
                hits["worker restarted"] += 1
                worker.stop()
                worker.start()
                restarts += 1
        return restarts

    return inject


def one_after_another(plans: list[FaultPlan]) -> FaultPlan:
    """The faults of `plans`, each plan after the one before it has ended."""

    async def inject(stack: ChaosStack, runs: list[TurnRun], hits: Counter[str]) -> int:
        return sum([await plan(stack, runs, hits) for plan in plans])

    return inject


async def no_faults(stack: ChaosStack, runs: list[TurnRun], hits: Counter[str]) -> int:
    return 0


def provider_fault_replies() -> dict[str, Step]:
    """What the first model call of a turn meets before it is answered."""
    return {
        "429 with retry-after": [fake.rate_limited(retry_after=1)],
        "529 burst": [fake.overloaded()] * 3,
        "500/502/503/504": [fake.server_error(s) for s in (500, 502, 503, 504)],
        "stream cut mid-SSE": [fake.stream_cut()],
        "200 with a broken body": [fake.broken_body(), fake.invalid_json()],
        "reply slower than the timeout": [fake.slow(fake.text("late"), PROVIDER_TIMEOUT_S + 2)],
    }


def mcp_fault_calls() -> dict[str, tuple[str, dict[str, Any]]]:
    """MCP tool calls that fail the server (`turnkeeper/testing/mcp_demo_server.py`, stdio, a call
    timeout of `stack.MCP_TIMEOUT_S`): its process exits mid-call, or it never answers."""
    return {
        "crash mid-call": ("mcp__demo__exit_server", {}),
        "hang past the call timeout": ("mcp__demo__slow", {"seconds": 120}),
    }


def scripted_faults(phase: str) -> FaultPlan:
    """Faults scripted into the turns themselves (the fake provider's replies, the MCP server's
    tool), striking each turn once in `phase`. A reply slower than the timeout is answered (and
    billed) after the caller gave up: one call in flight."""

    async def inject(stack: ChaosStack, runs: list[TurnRun], hits: Counter[str]) -> int:
        hits[phase] += len(runs)
        return 1

    return inject
