"""The session row of the chaos matrix: conversations of a few turns each
(`session_workload.py`), their worker killed (kill -9) while a `send` is in flight and while a
turn's compaction (its summary call) runs.

Each turn is judged by the matrix's properties, and each session as a whole: every message sent
got its turn, each once; the `messages` query holds every turn's exchange whole and in order;
the session's cost is its turns'.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from temporalio.service import RPCError
from turnkeeper.workflows.llm.compaction import SUMMARY_INSTRUCTIONS

from bench.chaos.faults import phases
from bench.chaos.properties import RowResult, TurnVerdict
from bench.chaos.session_workload import (
    TURN_TEXT,
    SendTrap,
    SessionRun,
    drive_session,
    is_summary,
    message,
    session_model,
    tool_id,
)
from bench.chaos.stack import ChaosStack, WorkerProcess
from tests.fakes import fake_anthropic as fake
from turnkeeper.client.errors import SessionRefused

TARGETS = ("send", "compaction")


@dataclass(frozen=True)
class SessionSizes:
    """How much the session row does."""

    sessions: int
    turns: int
    kills: int


# The CI size: one kill in a send and one in a compaction, the two phases the row is about.
QUICK = SessionSizes(sessions=2, turns=3, kills=2)
FULL = SessionSizes(sessions=6, turns=4, kills=8)


SessionFaults = Callable[[ChaosStack, list[SessionRun], Counter[str]], Awaitable[int]]


def session_kills(count: int, rng: random.Random, trap: SendTrap) -> SessionFaults:
    """kill -9 of the worker holding a session while its `send` is in flight, and of the worker
    running a turn's compaction summary call, in turn; each restarted after 0-5 s."""

    async def inject(stack: ChaosStack, runs: list[SessionRun], hits: Counter[str]) -> int:
        first = rng.randrange(len(TARGETS))
        restarts = []
        for strike in range(count):
            await asyncio.sleep(rng.uniform(0.5, 2.0))
            target = TARGETS[(first + strike) % len(TARGETS)]
            if target == "send":
                victim = await _during_send(stack, trap, hits, rng)
            else:
                victim = await _during_compaction(stack, runs, hits, rng)
            victim.kill()
            restarts.append(asyncio.create_task(_restart(victim, rng.uniform(0.0, 5.0))))
        await asyncio.gather(*restarts)
        return count

    return inject


async def _restart(worker: WorkerProcess, after_s: float) -> None:
    await asyncio.sleep(after_s)
    worker.start()


async def _during_send(
    stack: ChaosStack, trap: SendTrap, hits: Counter[str], rng: random.Random
) -> WorkerProcess:
    trap.armed = asyncio.get_running_loop().create_future()
    try:
        send, run, turn, holder = await asyncio.wait_for(trap.armed, timeout=60)
    except TimeoutError:
        hits["no send left"] += 1
        return rng.choice(stack.workers)
    await asyncio.sleep(rng.uniform(0.0, 0.02))
    victim = _worker_of(stack, holder) or rng.choice(stack.workers)
    if send.done():
        hits["send (answered before the kill)"] += 1
    else:
        hits["send"] += 1
        run.hit_sends.add(turn)
    return victim


async def _during_compaction(
    stack: ChaosStack, runs: list[SessionRun], hits: Counter[str], rng: random.Random
) -> WorkerProcess:
    """Waits (up to 30 s) until a summary call is in flight, and names its worker."""
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        for run in runs:
            if run.turn_runs and _summarizing(stack, run.key):
                live = await phases(stack, run.turn_runs[-1:])
                phase = live.get(run.turn_runs[-1].key)
                if phase is not None and phase.name == "model call":
                    hits["compaction summary call"] += 1
                    return _worker_of(stack, phase.worker_pid) or rng.choice(stack.workers)
        await asyncio.sleep(0.1)
    hits["no compaction in flight"] += 1
    return rng.choice(stack.workers)


def _summarizing(stack: ChaosStack, key: str) -> bool:
    """Whether a summary request of session `key` is still unanswered."""
    asked = sum(
        fake.system_text(request.body.get("system")) == SUMMARY_INSTRUCTIONS
        for request in stack.fake.requests_for(key)
    )
    answered = sum(is_summary(call.output_tokens) for call in stack.fake.billed_for(key))
    return asked > answered


def _worker_of(stack: ChaosStack, pid: int | None) -> WorkerProcess | None:
    return next((w for w in stack.workers if w.process is not None and w.process.pid == pid), None)


def judge_session(stack: ChaosStack, run: SessionRun, ledger: list[str]) -> list[TurnVerdict]:
    """A verdict for every turn the session was to have (one never started is stuck)."""
    bills = stack.fake.billed_for(run.key)
    effects = Counter(ledger)
    verdicts = []
    for turn in range(1, run.turns + 1):
        turn_run = run.turn_runs[turn - 1] if turn <= len(run.turn_runs) else None
        report = turn_run.report if turn_run else None
        mine = [call for call in bills if call.output_tokens // 1000 == turn]
        first = {call.output_tokens: call for call in reversed(mine)}
        counted = report.llm_calls if report else 0
        usage_matches = report is None or (
            len(first) == counted
            and sum(c.input_tokens for c in first.values()) == report.usage.input_tokens
            and sum(c.output_tokens for c in first.values()) == report.usage.output_tokens
        )
        verdicts.append(
            TurnVerdict(
                key=f"{run.key}/turn-{turn}",
                outcome=turn_run.outcome if turn_run else "stuck",
                counted=counted,
                billed=len(mine),
                usage_matches=usage_matches,
                duplicates=max(0, effects[tool_id(run.key, turn, 0)] - 1),
                sends_in_outage=int(turn in run.hit_sends),
                sends_lost=int(turn in run.lost_sends),
                first_tool_failed=False,
            )
        )
    return verdicts


async def whole_problem(run: SessionRun) -> str | None:
    """What is wrong with the session as a whole: a turn missing or repeated, its conversation
    not every turn's exchange in order, its cost not its turns'."""
    if run.handle is None or len(run.turn_runs) < run.turns:
        return None  # its turns are judged stuck
    if any(turn.outcome != "completed" for turn in run.turn_runs):
        return None  # a failed turn stays out of the conversation: judged as the turn
    reports = [turn.report for turn in run.turn_runs]
    status = await run.handle.status()
    messages = await run.handle.messages()
    exchanges = [m for report in reports if report for m in report.messages]
    texts = [m.text() for m in messages if m.role == "user" and TURN_TEXT.search(m.text())]
    problems = []
    if status.turns != run.turns or status.state != "idle":
        problems.append(f"{status.turns} turns recorded ({status.state}), {run.turns} sent")
    if messages != exchanges:
        problems.append(f"its {len(messages)} messages are not its turns' {len(exchanges)}")
    if texts != [message(run.key, n) for n in range(1, run.turns + 1)]:
        problems.append(f"the messages sent read {len(texts)} times, not once each in order")
    cost = sum(report.cost_usd for report in reports if report)
    if not math.isclose(status.cost_usd, cost, rel_tol=1e-6, abs_tol=1e-6):
        problems.append(f"its cost ${status.cost_usd:.6f} is not its turns' ${cost:.6f}")
    return "; ".join(problems) or None


async def run_session_row(
    stack: ChaosStack, fault: str, sizes: SessionSizes, rng: random.Random, bound_s: float
) -> RowResult:
    """Runs the sessions to their last turn (or the bound) while the kills strike."""
    runs = [SessionRun(f"ss{uuid.uuid4().hex[:8]}", sizes.turns) for _ in range(sizes.sessions)]
    for run in runs:
        stack.fake.script(run.key, [session_model(run.key)] * (sizes.turns * 8))
    trap = SendTrap()
    started = time.monotonic()
    deadline = started + bound_s
    hits: Counter[str] = Counter()
    injected, *_ = await asyncio.gather(
        session_kills(sizes.kills, rng, trap)(stack, runs, hits),
        *(drive_session(stack, run, trap, deadline, rng.uniform(0, 4.0)) for run in runs),
    )
    ledger = stack.ledger_lines()
    verdicts: list[TurnVerdict] = []
    unwhole: list[str] = []
    for run in runs:
        verdicts += judge_session(stack, run, ledger)
        problem = await whole_problem(run)
        unwhole += [f"{fault} · session {run.key}: {problem}"] if problem else []
        if problem is None and run.handle is not None and len(run.turn_runs) == run.turns:
            # Ended, so that nothing of this row waits on the server; refused if a turn is stuck.
            with contextlib.suppress(SessionRefused, RPCError):
                await run.handle.close("the row is over")
    if sizes.kills and "send" not in hits:
        unwhole.append(f"{fault}: no kill met a send in flight")
    wall_s = time.monotonic() - started
    return RowResult(fault, bound_s, injected, verdicts, hits, wall_s, own_violations=unwhole)


async def session_rows(stack: ChaosStack, quick: bool, rng: random.Random) -> list[RowResult]:
    sizes = QUICK if quick else FULL
    return [
        await run_session_row(
            stack, "session: worker kill -9 in a send, in a compaction", sizes, rng,
            bound_s=60.0 * sizes.kills + 30.0 * sizes.turns + 60,
        )
    ]  # fmt: skip
