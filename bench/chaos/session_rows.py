"""The session row of the chaos matrix: conversations of a few turns each, their worker killed
(kill -9) while a `send` is in flight and while a turn's compaction (its summary call) runs.

Every turn of a session: a model call, `record_payment` (not idempotent: the ledger counts its
runs), a model call, `lookup`, a model call that answers. Tool inputs are long, so that from
the second turn on the conversation outgrows `agent.compaction`'s limit and a summary call
compacts it. Each turn is judged by the matrix's properties, and each session as a whole:
every message sent got its turn, each once; the `messages` query holds every turn's exchange
whole and in order; the session's cost is its turns'.

How a bill finds its call: the model's answers are a function of the request (the turn and
the call it is at, read off the last message), and each states its output tokens as
`turn × 1000 + call` (a summary: `turn × 1000 + 500 + a digest of the request`). A compacted
request has fewer messages than the one before it, so the matrix's `(script, step)` would
name two calls alike; this names each once, and its turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import re
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio.client import WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.service import RPCError
from turnkeeper.contracts.names import UPDATE_SEND
from turnkeeper.contracts.session import SendResult
from turnkeeper.workflows.llm.compaction import SUMMARY_INSTRUCTIONS

from bench.chaos.faults import phases
from bench.chaos.properties import RowResult, TurnVerdict
from bench.chaos.stack import ChaosStack, WorkerProcess
from bench.chaos.workload import RPC_PATIENCE_S, TurnRun, read_outcome
from tests.fakes import fake_anthropic as fake
from tests.fakes.anthropic_replies import JsonDict, MessageReply, Reply
from turnkeeper.client.errors import SessionRefused
from turnkeeper.client.sessions import SessionHandle, start_session

MODEL = "anthropic:claude-sonnet-4-6"
TOOLS = ("record_payment", "lookup")  # the calls of every turn, in order
# Tool inputs of ~1.2 KB: a turn adds ~1,200 tokens, so the second turn passes the limit.
FILLER = "ledger line " * 100
COMPACTION = {"strategy": "summarize", "max_input_tokens": 2_000}
TARGETS = ("send", "compaction")
_TURN = re.compile(r"Turn (\d+):")
_ANSWERING = re.compile(r"answers now:\nTurn (\d+):")


@dataclass(frozen=True)
class SessionSizes:
    """How much the session row does."""

    sessions: int
    turns: int
    kills: int


# The CI size: one kill in a send and one in a compaction, the two phases the row is about.
QUICK = SessionSizes(sessions=2, turns=3, kills=2)
FULL = SessionSizes(sessions=6, turns=4, kills=8)


def tool_id(key: str, turn: int, call: int) -> str:
    return f"toolu_{key}_t{turn}_{call}"


def message(key: str, turn: int) -> str:
    # The first message carries the script's key: a summary call quotes it (its system prompt
    # is the summary's own).
    marker = f" {fake.script_marker(key)}" if turn == 1 else ""
    return f"Turn {turn}: record and look up invoice {turn}.{marker}"


def session_model(key: str) -> Callable[[JsonDict], Reply]:
    """The model of session `key`: its answer depends only on the request, so a call retried
    after a kill gets the same answer (and the same bill)."""
    delays = random.Random(key)

    def reply(body: JsonDict) -> Reply:
        if fake.system_text(body.get("system")) == SUMMARY_INSTRUCTIONS:
            found = _ANSWERING.search(_texts(body["messages"]))
            turn = int(found.group(1)) if found else 1
            digest = zlib.crc32(repr(body["messages"]).encode()) % 400
            summary = fake.text(f"Summary before turn {turn}.", usage=_billed(turn, 500 + digest))
            # Long enough for a kill aimed at a compaction to find it running.
            return fake.slow(summary, delays.uniform(1.5, 3.0))
        turn, call = _position(key, body["messages"][-1])
        if call < len(TOOLS):
            use = {
                "type": "tool_use",
                "id": tool_id(key, turn, call),
                "name": TOOLS[call],
                "input": {"entry" if call == 0 else "query": f"{key} {turn} {FILLER}"},
            }
            answer: Reply = MessageReply((use,), "tool_use", _billed(turn, call))
        else:
            answer = fake.text(f"Turn {turn} done.", usage=_billed(turn, call))
        return fake.slow(answer, delays.uniform(0.2, 1.0))

    return reply


def _texts(messages: list[JsonDict]) -> str:
    """The text of every text block of `messages`, one after the other."""
    return "\n".join(
        block.get("text", "") if isinstance(block, dict) else str(block)
        for message in messages
        for block in (
            message["content"] if isinstance(message["content"], list) else [message["content"]]
        )
    )


def _billed(turn: int, call: int) -> dict[str, int]:
    return {"output_tokens": turn * 1000 + call}


def _position(key: str, last: JsonDict) -> tuple[int, int]:
    """The turn and call a request is at: after the user's message, call 0; after the result
    of call c, call c + 1."""
    for block in last.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            turn, call = block["tool_use_id"].removeprefix(f"toolu_{key}_t").split("_")
            return int(turn), int(call) + 1
    found = _TURN.search(_texts([last]))
    return (int(found.group(1)) if found else 1), 0


def session_agent(key: str) -> dict[str, Any]:
    return {
        "id": "chaos-session",
        "model": MODEL,
        "system_prompt": f"A chaos session. {fake.script_marker(key)}",
        "tools": list(TOOLS),
        "max_iterations": len(TOOLS) + 2,
        "compaction": COMPACTION,
    }


@dataclass
class SessionRun:
    """One session as its caller saw it."""

    key: str
    turns: int
    turn_runs: list[TurnRun] = field(default_factory=list)
    hit_sends: set[int] = field(default_factory=set)  # turns whose send a kill met in flight
    lost_sends: set[int] = field(default_factory=set)
    handle: SessionHandle | None = None

    @property
    def session_id(self) -> str:
        return f"chaos-{self.key}"


# A send in flight as the trap takes it: the send, its session, its turn, the session's worker.
SendInFlight = tuple[asyncio.Task[str | None], SessionRun, int, int | None]


@dataclass
class SendTrap:
    """A kill armed for the next `send` of any session: the caller that sends next hands over
    its send in flight and the pid of the worker that holds its session."""

    armed: asyncio.Future[SendInFlight] | None = None


async def drive_session(
    stack: ChaosStack, run: SessionRun, trap: SendTrap, deadline: float, delay_s: float
) -> None:
    """Starts the session and sends its messages one after the other, each once its turn has
    ended and the session has recorded it."""
    await asyncio.sleep(delay_s)
    run.handle = await start_session(
        stack.client, session_id=run.session_id, agent=session_agent(run.key),
        task_queue=stack.task_queue,
    )  # fmt: skip
    for turn in range(1, run.turns + 1):
        holder = await _holder_pid(stack, run)
        send = asyncio.create_task(_send(run, turn))
        armed, trap.armed = trap.armed, None
        if armed is not None and not armed.done():
            armed.set_result((send, run, turn, holder))
        turn_id = await send
        if turn_id is None:
            run.lost_sends.add(turn)
            return
        turn_run = TurnRun(f"{run.key}/turn-{turn}", turn_id)
        run.turn_runs.append(turn_run)
        try:
            await asyncio.wait_for(
                read_outcome(stack.client, turn_run), deadline - time.monotonic()
            )
            await _settled(run.handle, deadline)
        except TimeoutError:
            return


async def _send(run: SessionRun, turn: int) -> str | None:
    """The `send` update, retried through a dead worker under one update id, so that a retry
    of a send that went through is the same send; None when it never did, or was refused (no
    refusal is due: each send waits until the session has recorded the turn before)."""
    assert run.handle is not None
    payload = {"input": message(run.key, turn)}
    deadline = time.monotonic() + RPC_PATIENCE_S
    while time.monotonic() < deadline:
        try:
            result = await run.handle.workflow.execute_update(
                UPDATE_SEND, payload, id=f"send-{turn}", result_type=SendResult
            )
            return result.turn_workflow_id
        except WorkflowUpdateFailedError:
            return None
        except RPCError:
            await asyncio.sleep(0.5)
    return None


async def _holder_pid(stack: ChaosStack, run: SessionRun) -> int | None:
    """The worker that ran the session's last workflow task: its next task (the send's) goes
    to that worker's sticky queue first."""
    identity = ""
    handle = stack.client.get_workflow_handle(run.session_id)
    async for event in handle.fetch_history_events():
        if event.HasField("workflow_task_started_event_attributes"):
            identity = event.workflow_task_started_event_attributes.identity
    pid = identity.split("@")[0]
    return int(pid) if pid.isdigit() else None


async def _settled(handle: SessionHandle, deadline: float) -> None:
    """Until the session has recorded its turn's end (a query: it needs a live worker)."""
    while time.monotonic() < deadline:
        try:
            if (await handle.status()).running_turn_id is None:
                return
        except (RPCError, WorkflowQueryFailedError):
            pass
        await asyncio.sleep(0.3)
    raise TimeoutError


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
    answered = sum(call.output_tokens % 1000 >= 500 for call in stack.fake.billed_for(key))
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
    texts = [m.text() for m in messages if m.role == "user" and _TURN.search(m.text())]
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
