"""The evaluation rows of the chaos matrix: an evaluation run (`EvalRunWorkflow`, started as
`turnkeeper eval` starts it) whose case turns meet a worker kill -9, and then the server killed
and restarted on its SQLite file.

Every case has a script of its own (its key in the system prompt its inputs give), so the fake
provider bills each case apart: a `lookup` call, then the answer, each a moment long, so that a
kill meets calls in flight. Each case's turn is judged by the matrix's properties
(`properties.py`), and the run as a whole: it completed with one result per case × model ×
repetition, each case's turn was started once (one child start at its id in the run's history,
one execution of that id), and every case scored what it should (every third case expects
another answer: `EqualsExpected` fails there and passes elsewhere).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.service import RPCError
from turnkeeper.contracts.evals import EvalProgress, EvalRunInput
from turnkeeper.workflows.evals.cases import Unit, child_id, total_units, unit_at

from bench.chaos.faults import FaultPlan, server_kills, worker_kills
from bench.chaos.properties import RowResult, judge
from bench.chaos.stack import ChaosStack
from bench.chaos.workload import TurnRun, read_outcome
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import Step
from turnkeeper.console.eval_command import EvalOptions, prepare, start_run

MODEL = "anthropic:claude-sonnet-4-6"
# What a kill aims at in the cases' turns, in turn from a seeded start (the full size). The
# quick size aims its one kill at a tool call: a killed call is retried once its heartbeat
# times out, 20 s for a tool call, 30 s for a model call, and the CI budget is tight; the turn
# rows kill model calls at every size.
CASE_PHASES = ("model call", "tool call")
# The dataset's scorers, and what each case scores when the run went right.
EVALUATORS: list[Any] = [
    "EqualsExpected",
    "TurnOutcome",
    {"ToolCalled": {"tool": "lookup"}},
    {"MaxIterations": 2},
]


@dataclass(frozen=True)
class EvalSizes:
    """How much the evaluation rows do."""

    cases: int
    concurrency: int
    worker_kills: int
    server_kills: int


# The CI size: one kill of each, in a run whose cases go two at a time, so that cases are still
# to start after the kill as well as in flight at it.
QUICK = EvalSizes(cases=4, concurrency=2, worker_kills=1, server_kills=1)
FULL = EvalSizes(cases=16, concurrency=4, worker_kills=4, server_kills=2)


def case_steps(key: str, rng: random.Random) -> list[Step]:
    """A case's model answers: a `lookup` call, then the answer."""

    def slow(reply: Step) -> Step:
        return fake.slow(reply, rng.uniform(0.2, 1.2))

    return [slow(fake.tool_calls(("lookup", {"query": key}))), slow(fake.text(answer(key)))]


def answer(key: str) -> str:
    return f"answer {key}"


def answers_right(index: int) -> bool:
    """Whether case `index` expects the answer its script gives."""
    return index % 3 != 2


def expected_scores(index: int) -> dict[str, Any]:
    return {
        "TurnOutcome": True,
        "ToolCalled": True,
        "MaxIterations": True,
        "EqualsExpected": answers_right(index),
    }


def eval_options(stack: ChaosStack, run_id: str, keys: list[str], concurrency: int) -> EvalOptions:
    """`turnkeeper eval`'s options for a run of one case per key: the dataset and the agent
    file written where the command would read them."""
    cases = [
        {
            "name": f"case {key}",
            "inputs": {
                "agent": {"system_prompt": f"A chaos eval case. {fake.script_marker(key)}"},
                "task": {"input": f"Look {key} up and answer."},
            },
            "expected_output": answer(key) if answers_right(index) else f"not {answer(key)}",
        }
        for index, key in enumerate(keys)
    ]
    dataset = stack.data_dir / f"{run_id}.json"
    dataset.write_text(json.dumps({"name": "chaos", "evaluators": EVALUATORS, "cases": cases}))
    agent = stack.data_dir / f"{run_id}-agent.json"
    agent.write_text(
        json.dumps(
            {
                "id": "chaos-eval",
                "model": MODEL,
                "system_prompt": "A chaos eval case.",
                "tools": ["lookup"],
                "max_iterations": 4,
            }
        )
    )
    return EvalOptions(
        dataset=dataset, agent=agent, models=[], repeat=1, concurrency=concurrency,
        max_cost_usd=None, run_id=run_id, report=None, fail_under=None, approvals="reject",
        tenant=None, task_queue=stack.task_queue,
    )  # fmt: skip


async def until_done(handle: WorkflowHandle[Any, EvalProgress], deadline: float) -> EvalProgress:
    """The run's result, asked again through an outage until `deadline`.

    Raises:
        TimeoutError: not ended by `deadline`.
        WorkflowFailureError: the run failed.
    """
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        try:
            return await asyncio.wait_for(handle.result(), timeout=left)
        except RPCError:
            await asyncio.sleep(0.5)


async def run_eval_row(
    stack: ChaosStack, fault: str, sizes: EvalSizes, inject: FaultPlan, bound_s: float,
    rng: random.Random,
) -> RowResult:  # fmt: skip
    """Runs one evaluation to its end (or the bound) while `inject` strikes its cases' turns,
    then judges every case's turn and the run."""
    run_id = f"chaos-ev{uuid.uuid4().hex[:8]}"
    keys = [f"ev{uuid.uuid4().hex[:8]}" for _ in range(sizes.cases)]
    for key in keys:
        stack.fake.script(key, case_steps(key, rng))
    _, run = prepare(eval_options(stack, run_id, keys, sizes.concurrency))
    cases = [TurnRun(key, child_id(run_id, run, Unit(n, 0, 0))) for n, key in enumerate(keys)]
    started = time.monotonic()
    hits: Counter[str] = Counter()
    handle = await start_run(stack.client, run_id, run, stack.task_queue)

    async def outcome() -> EvalProgress | str:
        try:
            return await until_done(handle, started + bound_s)
        except TimeoutError:
            return f"not ended within {bound_s:g} s{await waiting_on(handle)}"
        except WorkflowFailureError as failure:
            return f"failed: {failure.cause or failure}"

    injected, progress = await asyncio.gather(inject(stack, cases, hits), outcome())
    for case in cases:
        # A run that ended has its cases' reports there to read; a stuck one may not.
        with contextlib.suppress(TimeoutError):
            patience = 60 if isinstance(progress, EvalProgress) else 5
            await asyncio.wait_for(read_outcome(stack.client, case), timeout=patience)
    ledger = stack.ledger_lines()
    verdicts = [judge(case, stack.fake, ledger) for case in cases]
    problems = (
        await run_problems(stack.client, run_id, run, progress)
        if isinstance(progress, EvalProgress)
        else [progress]
    )
    wall_s = time.monotonic() - started
    return RowResult(
        fault, bound_s, injected, verdicts, hits, wall_s,
        own_violations=[f"{fault} · run {run_id}: {problem}" for problem in problems],
    )  # fmt: skip


async def waiting_on(handle: WorkflowHandle[Any, EvalProgress]) -> str:
    """What a run that has not ended waits on: its activities in flight, with their attempts."""
    with contextlib.suppress(RPCError):
        pending = (await handle.describe()).raw_description.pending_activities
        return "; waiting on " + (
            ", ".join(f"{a.activity_type.name} (attempt {a.attempt})" for a in pending)
            or "no activity"
        )
    return ""


async def run_problems(
    client: Client, run_id: str, run: EvalRunInput, progress: EvalProgress
) -> list[str]:
    """What is wrong with the run as a whole: a result missing, repeated or not completed, a
    score not the case's, a case's turn started more than once."""
    units = [unit_at(run, index) for index in range(total_units(run))]
    wanted = {(run.cases[u.case].name, run.models[u.model], u.repetition + 1): u for u in units}
    got = Counter((r.case, r.model, r.repetition) for r in progress.results)
    problems = [
        f"{n} result(s) for {name}" for name, n in got.items() if n != 1 or name not in wanted
    ]
    problems += [f"no result for {name}" for name in wanted if name not in got]
    for result in progress.results:
        unit = wanted.get((result.case, result.model, result.repetition))
        if unit is None:
            continue
        if result.outcome != "completed":
            problems.append(f"{result.case}: {result.outcome} ({result.error})")
        scores = {name: score.value for name, score in result.scores.items()}
        if scores != expected_scores(unit.case) or result.scorer_errors:
            problems.append(
                f"{result.case} scored {scores} {result.scorer_errors or ''}, "
                f"not {expected_scores(unit.case)}"
            )
    problems += await started_twice(client, run_id, [child_id(run_id, run, u) for u in units])
    return problems


async def started_twice(client: Client, run_id: str, child_ids: list[str]) -> list[str]:
    """Each case's turn id started once by the run (its history's child starts, across its
    continued runs) and run once (the executions at that id)."""
    starts: Counter[str] = Counter()
    runs = [w async for w in client.list_workflows(f"WorkflowId = '{run_id}'")]
    for listed in runs:
        history = await client.get_workflow_handle(run_id, run_id=listed.run_id).fetch_history()
        for event in history.events:
            if event.HasField("start_child_workflow_execution_initiated_event_attributes"):
                attributes = event.start_child_workflow_execution_initiated_event_attributes
                starts[attributes.workflow_id] += 1
    problems = [f"child {cid} started {starts[cid]}×" for cid in child_ids if starts[cid] != 1]
    problems += [f"a child {cid} no case has" for cid in starts if cid not in child_ids]
    for cid in child_ids:
        executions = [w async for w in client.list_workflows(f"WorkflowId = '{cid}'")]
        if len(executions) != 1:
            problems.append(f"{len(executions)} executions of {cid}")
    return problems


async def eval_rows(stack: ChaosStack, quick: bool, rng: random.Random) -> list[RowResult]:
    """An evaluation run under worker kills aimed at its cases' model and tool calls, then one
    under server kills while its cases' calls are in flight."""
    sizes = QUICK if quick else FULL
    first = rng.randrange(len(CASE_PHASES))
    phases = ("tool call",) if quick else CASE_PHASES[first:] + CASE_PHASES[:first]
    kills, outages = sizes.worker_kills, sizes.server_kills
    return [
        await run_eval_row(
            stack, "eval run: worker kill -9 in a case", sizes, worker_kills(kills, rng, phases),
            bound_s=60.0 * kills + 60, rng=rng,
        ),
        await run_eval_row(
            stack, "eval run: server kill -9, restart same SQLite", sizes,
            server_kills(outages, rng, CASE_PHASES), bound_s=90.0 * outages + 60, rng=rng,
        ),
    ]  # fmt: skip
