"""The sub-agent tree rows of the chaos matrix: a lead whose first answer starts two sub-agents at
once, killed where the children work, and its server killed while a child's call waits for the
decision the caller sends to the root.

Each tree is three turns, each judged by the matrix's properties (`properties.py`):

- the lead (`chaos-<key>`): calls `researcher` and `payer` in one answer, then answers;
- `researcher` (`…/researcher-1`): `lookup`, then answers;
- `payer` (`…/payer-1`): `lookup`, then `record_payment` (it inherits the lead's
  `require_approval`, so the call waits; the caller approves it at the root, which relays it),
  then answers.

Each has a script of its own (its key in its system prompt), so the fake provider bills every
node apart. The lead's own calls are its report's `llm_calls` less its children's; and the tree
adds up: the lead's `usage`, `llm_calls` and `cost_usd` are what the provider billed for the
whole tree, each call once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.service import RPCError
from turnkeeper.contracts.pricing import cost_usd, price_for
from turnkeeper.contracts.turn import Usage

from bench.chaos.faults import FaultPlan, Phase, aim, aimed_victim, server_kills
from bench.chaos.properties import RowResult, TurnVerdict, judge
from bench.chaos.stack import ChaosStack, WorkerProcess
from bench.chaos.workload import APPROVAL_STEP, TurnRun, call_id, drive, read_outcome, start_turn
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic, Step

MODEL = "anthropic:claude-sonnet-4-6"
CHILDREN = ("researcher", "payer")
# What a kill aims at in the children, in turn: each phase a child's work passes through.
CHILD_PHASES = ("model call", "tool call", "approval wait")


@dataclass(frozen=True)
class TreeSizes:
    """How much the tree rows do."""

    trees: int
    worker_kills: int
    server_kills: int


# The CI size. Two kills, the phases of the cycle taken from a seeded start, so that CI's runs
# share out all three over time; the full size aims at each of them three times.
QUICK = TreeSizes(trees=3, worker_kills=2, server_kills=1)
FULL = TreeSizes(trees=10, worker_kills=9, server_kills=3)


def child_key(root: str, name: str) -> str:
    """The script key of sub-agent `name` of the tree of `root`."""
    return f"{root}{name[0]}"


def child_workflow_id(root: str, name: str) -> str:
    """The workflow id of sub-agent `name`'s first call in the tree of `root`."""
    return f"chaos-{root}/{name}-1"


def tree_scripts(root: str, rng: random.Random) -> list[tuple[str, list[Step]]]:
    """The model answers of every node of the tree of `root`, each a moment long, so that a
    kill meets model calls in flight."""

    def slow(reply: Step) -> Step:
        return fake.slow(reply, rng.uniform(0.2, 1.2))

    lead = [
        slow(
            fake.tool_calls(("researcher", {"task": f"look {root} up"}), ("payer", {"task": root}))
        ),
        slow(fake.text("both done")),
    ]
    researcher = [slow(fake.tool_calls(("lookup", {"query": root}))), slow(fake.text("found"))]
    payer = [
        slow(fake.tool_calls(("lookup", {"query": f"invoice {root}"}))),
        slow(fake.tool_calls(("record_payment", {"entry": root}))),
        slow(fake.text("paid")),
    ]
    return [
        (root, lead),
        (child_key(root, "researcher"), researcher),
        (child_key(root, "payer"), payer),
    ]


def tree_request(root: str) -> dict[str, Any]:
    """The lead of the tree of `root`: no tools of its own, two sub-agents with the matrix's
    tools; `record_payment` needs approval anywhere in the tree."""

    def subagent(name: str, tools: list[str]) -> dict[str, Any]:
        agent = {
            "id": f"chaos-{name}",
            "model": MODEL,
            "system_prompt": f"A chaos {name}. {fake.script_marker(child_key(root, name))}",
            "tools": tools,
            "max_iterations": 4,
        }
        return {"name": name, "description": f"The {name}.", "agent": agent}

    return {
        "agent": {
            "id": "chaos-lead",
            "model": MODEL,
            "system_prompt": f"A chaos lead. {fake.script_marker(root)}",
            "tools": [],
            "max_iterations": 4,
            "subagents": [
                subagent("researcher", ["lookup"]),
                subagent("payer", ["lookup", "record_payment"]),
            ],
        },
        "task": {
            "id": root,
            "input": "Have the invoice looked up and paid.",
            "constraints": {"require_approval": ["record_payment"]},
        },
    }


def tree_run(root: str) -> TurnRun:
    """The lead as its caller sees it: the payer's approval is decided at the lead."""
    return TurnRun(
        root, f"chaos-{root}", approval_call=call_id(child_key(root, "payer"), APPROVAL_STEP)
    )


def children(runs: list[TurnRun]) -> list[TurnRun]:
    """The sub-agents' turns of the trees of `runs`, to watch (their keys are their scripts')."""
    return [
        TurnRun(child_key(run.key, name), child_workflow_id(run.key, name))
        for run in runs
        for name in CHILDREN
    ]


class Waves:
    """Trees started a few at a time, a wave as each kill begins: however long the kills before
    took (a restarted worker takes many seconds to start on a loaded machine), the next one
    finds trees at work, where trees started at random moments had all ended before it."""

    def __init__(self, count: int) -> None:
        self._gates = [asyncio.Event() for _ in range(max(1, count))]

    async def wait(self, index: int) -> None:
        """Until the wave of the `index`-th tree is let go."""
        await self._gates[index % len(self._gates)].wait()

    def release(self, wave: int) -> None:
        self._gates[wave % len(self._gates)].set()

    def release_all(self) -> None:
        for gate in self._gates:
            gate.set()


def child_worker_kills(count: int, rng: random.Random, waves: Waves) -> FaultPlan:
    """kill -9 of the worker running a child's model call or tool call, or holding a child's
    approval wait (the caller holds its decision until the kill), restarted after 0-5 s; each
    kill lets a wave of trees go first."""

    async def inject(stack: ChaosStack, runs: list[TurnRun], hits: Counter[str]) -> int:
        first = rng.randrange(len(CHILD_PHASES))
        for strike in range(count):
            waves.release(strike)
            await asyncio.sleep(rng.uniform(0.5, 2.0))
            target = CHILD_PHASES[(first + strike) % len(CHILD_PHASES)]
            for run in runs:
                # A decision sent at once would end most approval waits before a kill finds one.
                run.held = target == "approval wait"
            # Longer than the matrix's 8 s: a tree reaches its children's phases later than a
            # turn its own.
            now = await aim(stack, children(runs), (target,), within_s=20.0)
            victim = aimed_victim(stack, now, target, rng)
            victim_pid = victim.process.pid if victim.process else None
            _tally_children(hits, now, victim_pid)
            victim.kill()
            for run in runs:
                run.held = False
            await asyncio.sleep(rng.uniform(0.0, 5.0))
            victim.start()
            # The next kill waits for it, or it could find both workers down.
            await until_polling(stack, victim)
        waves.release_all()  # none is left waiting, however few the kills
        return count

    return inject


async def until_polling(stack: ChaosStack, worker: WorkerProcess, within_s: float = 30.0) -> None:
    """Waits (at most `within_s`) until `worker` polls the task queue for activities."""
    request = DescribeTaskQueueRequest(
        namespace=stack.client.namespace,
        task_queue=TaskQueue(name=stack.task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    )
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and worker.process is not None:
        with contextlib.suppress(RPCError):
            response = await stack.client.workflow_service.describe_task_queue(request)
            pid = str(worker.process.pid)
            if any(poller.identity.split("@")[0] == pid for poller in response.pollers):
                return
        await asyncio.sleep(0.5)


def _tally_children(hits: Counter[str], now: dict[str, Phase], victim_pid: int | None) -> None:
    for phase in now.values():
        elsewhere = phase.worker_pid is not None and victim_pid not in (None, phase.worker_pid)
        hits["child call on the other worker" if elsewhere else f"child {phase.name}"] += 1


async def run_tree_row(
    stack: ChaosStack, fault: str, roots: list[str], inject: FaultPlan, bound_s: float,
    rng: random.Random, *, stagger_s: float, needs_outage_sends: bool = False,
    waves: Waves | None = None,
) -> RowResult:  # fmt: skip
    """Runs the trees of `roots` to their end (or the bound) while `inject` strikes, then judges
    every node of every tree. They start spread over `stagger_s`, after their wave if given."""
    for root in roots:
        for key, steps in tree_scripts(root, rng):
            stack.fake.script(key, steps)
    started = time.monotonic()
    runs = [tree_run(root) for root in roots]
    hits: Counter[str] = Counter()
    deadline = started + bound_s

    async def one(index: int, run: TurnRun, delay: float) -> None:
        if waves is not None:
            await waves.wait(index)
        await asyncio.sleep(delay)
        request = tree_request(run.key)
        await start_turn(stack.client, stack.task_queue, run.key, False, request=request)
        await drive(stack.client, run, deadline)

    injected, *_ = await asyncio.gather(
        inject(stack, runs, hits),
        *(one(index, run, rng.uniform(0, stagger_s)) for index, run in enumerate(runs)),
    )
    ledger = stack.ledger_lines()
    verdicts: list[TurnVerdict] = []
    unadded: list[str] = []
    for run in runs:
        tree, problem = await judge_tree(stack, run, ledger)
        verdicts += tree
        unadded += [f"{fault} · tree {run.key}: {problem}"] if problem else []
    wall_s = time.monotonic() - started
    return RowResult(
        fault, bound_s, injected, verdicts, hits, wall_s, needs_outage_sends, own_violations=unadded
    )


async def judge_tree(
    stack: ChaosStack, run: TurnRun, ledger: list[str]
) -> tuple[list[TurnVerdict], str | None]:
    """The verdicts of the lead and its children, and what is wrong with the lead's sums."""
    nodes = children([run])
    for child in nodes:
        if run.outcome != "stuck":  # a lead ends after its children: theirs are there to read
            await asyncio.wait_for(read_outcome(stack.client, child), timeout=60)
    verdicts = [judge(child, stack.fake, ledger) for child in nodes]
    lead = judge(run, stack.fake, ledger)
    if run.report is None:
        return [lead, *verdicts], None
    own = run.report.llm_calls - sum(child.llm_calls for child in run.report.subagents)
    # The lead's own calls against its own bills; its usage is judged whole, below.
    lead = dataclasses.replace(lead, counted=own, usage_matches=True)
    return [lead, *verdicts], tree_sums_problem(stack.fake, run, [run.key, *[c.key for c in nodes]])


def tree_sums_problem(fake_provider: FakeAnthropic, run: TurnRun, keys: list[str]) -> str | None:
    """Whether the lead's report counts every call the provider billed for its tree, once: its
    `llm_calls`, `usage` and `cost_usd` against the first bill of each distinct call."""
    assert run.report is not None
    first: dict[tuple[str, int | None], Any] = {}
    for key in keys:
        for call in fake_provider.billed_for(key):
            first.setdefault((key, call.step), call)
    billed = Usage(
        input_tokens=sum(call.input_tokens for call in first.values()),
        output_tokens=sum(call.output_tokens for call in first.values()),
    )
    report = run.report
    price = price_for(MODEL)
    expected_cost = cost_usd(billed, price) if price is not None else report.cost_usd
    if (
        report.llm_calls == len(first)
        and report.usage.input_tokens == billed.input_tokens
        and report.usage.output_tokens == billed.output_tokens
        and math.isclose(report.cost_usd, expected_cost, rel_tol=1e-6, abs_tol=1e-6)
    ):
        return None
    return (
        f"the lead's report does not add up: {report.llm_calls} calls, "
        f"{report.usage.input_tokens}/{report.usage.output_tokens} tokens, "
        f"${report.cost_usd:.6f}; the tree was billed {len(first)} calls, "
        f"{billed.input_tokens}/{billed.output_tokens} tokens, ${expected_cost:.6f}"
    )


def new_roots(count: int, prefix: str) -> list[str]:
    return [f"{prefix}{uuid.uuid4().hex[:8]}" for _ in range(count)]


async def subagent_rows(stack: ChaosStack, quick: bool, rng: random.Random) -> list[RowResult]:
    """The tree rows: worker kills aimed at the children, then server kills with the decision
    sent to the root during the outage."""
    sizes = QUICK if quick else FULL
    kills, outages = sizes.worker_kills, sizes.server_kills
    waves = Waves(kills)
    return [
        await run_tree_row(
            stack, "sub-agent tree: worker kill -9 in a child", new_roots(sizes.trees, "tk"),
            child_worker_kills(kills, rng, waves), bound_s=60.0 * kills + 60, rng=rng,
            stagger_s=1.0, waves=waves,
        ),
        await run_tree_row(
            stack, "sub-agent tree: server kill -9, decided at the root",
            new_roots(max(2, sizes.trees // 2), "ts"), server_kills(outages, rng),
            bound_s=90.0 * outages + 60, rng=rng, stagger_s=6.0 * outages,
            needs_outage_sends=True,
        ),
    ]  # fmt: skip
