"""The HTTP API row of the chaos matrix: `turnkeeper serve` as its own process, killed (-9) and
started again on its port, and the Temporal server killed and restarted on its SQLite file,
while one SSE client per turn follows the turn's events and decides its approval with
`POST /v1/turns/{id}/decisions`, as an operator's token.

A client acts as a person at the approval inbox would: it reads `approval_requested` on the
stream, thinks for `THINK_S`, then posts the decision; the faults strike turns that wait for
one, so that decisions are posted during the outage. A client that loses its stream reconnects
with `Last-Event-ID` (the last id it read), and retries a decision answered 5xx or refused a
connection. Besides the six properties of every turn (`properties.py`), the row checks:

- every client's events, its streams concatenated, are the turn's whole stream (read again at
  the end): nothing lost, nothing repeated, in order;
- every decision was applied once (one `approval_decided` of its call in the stream), and every
  answer the client got was the decision applied (200), an error it can retry (5xx, no
  connection), or 409 to a retry whose first attempt went through without an answer; a decision
  never applied is lost (`TurnRun.sends_lost`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import httpx2 as httpx

from bench.chaos.faults import FaultPlan, _tally, aim, one_after_another
from bench.chaos.matrix import Sizes, new_keys, run_row
from bench.chaos.properties import RowResult
from bench.chaos.stack import ChaosStack, WorkerProcess
from bench.chaos.workload import APPROVAL_STEP, RPC_PATIENCE_S, TurnRun, turn_steps
from bench.server import free_port
from turnkeeper.http.tokens import OPERATOR, TokenStore

IDENTITY: Final = "chaos-operator"
# How long a client takes to decide once it has read `approval_requested`.
THINK_S: Final = (1.0, 3.0)
RETRY_S: Final = 0.3
# Streams send a keepalive every 15 s while the turn is quiet: a read twice as long is a hang.
READ_TIMEOUT_S: Final = 30.0
FINAL_KINDS: Final = ("turn_finished", "turn_failed")


@dataclass
class ServeProcess:
    """`turnkeeper serve` on a fixed port: started and killed (-9) as the chaos workers are."""

    process: WorkerProcess
    url: str

    async def ready(self, within_s: float = 60.0) -> None:
        """Waits until it answers; a process that exits says why from its log."""
        deadline = time.monotonic() + within_s
        async with httpx.AsyncClient() as http:
            while time.monotonic() < deadline:
                if not self.process.alive():
                    raise RuntimeError(self.process.log_path.read_text()[-3000:])
                with contextlib.suppress(httpx.TransportError):
                    if (await http.get(self.url + "/")).status_code == 200:
                        return
                await asyncio.sleep(0.1)
        raise RuntimeError(f"turnkeeper serve did not answer within {within_s:g} s")


def serve_process(stack: ChaosStack) -> tuple[ServeProcess, str]:
    """A `turnkeeper serve` for the stack's server, and the token of an operator on it."""
    tokens = stack.data_dir / "tokens.json"
    token = TokenStore(tokens).add(IDENTITY, role=OPERATOR)
    port = free_port()
    command = [
        str(Path(sys.executable).with_name("turnkeeper")), "serve", "--tokens", str(tokens),
        "--port", str(port), "--address", stack.server.address,
    ]  # fmt: skip
    log = stack.data_dir / "serve.log"
    process = WorkerProcess(command, dict(os.environ), log)
    return ServeProcess(process, f"http://127.0.0.1:{port}"), token


@dataclass
class Follower:
    """What one client read of its turn and how its decision went."""

    events: list[tuple[int, str]] = field(default_factory=list)  # (id, data) in order read
    reconnects: int = 0  # streams opened again after the last id read
    answers: Counter[str] = field(default_factory=Counter)  # what its decision was answered
    problems: list[str] = field(default_factory=list)


@dataclass
class ApiClients:
    """The row's clients of the API and the outage they may be in."""

    serve: ServeProcess
    http: httpx.AsyncClient
    rng: random.Random
    followers: dict[str, Follower] = field(default_factory=dict)
    down: bool = False  # serve or the Temporal server is down

    async def follow(self, run: TurnRun, deadline: float) -> None:
        """Follows the turn's stream to its end, reconnecting after the last id read, and
        decides its approval."""
        follower = self.followers.setdefault(run.key, Follower())
        decisions: list[asyncio.Task[None]] = []
        url = f"/v1/turns/{run.workflow_id}/events"
        while time.monotonic() < deadline:
            headers = {"Last-Event-ID": str(follower.events[-1][0])} if follower.events else {}
            try:
                async with self.http.stream("GET", url, headers=headers) as answer:
                    if answer.status_code == 200:
                        follower.reconnects += bool(follower.events)
                        async for event_id, kind, data in _sse(answer):
                            follower.events.append((event_id, data))
                            if kind == "approval_requested":
                                call = json.loads(data)["call_id"]
                                decisions.append(asyncio.create_task(self.decide(run, call)))
                            if kind in FINAL_KINDS:
                                await asyncio.gather(*decisions)
                                return
                    elif answer.status_code < 500 and (
                        follower.events or answer.status_code != 404
                    ):
                        # 404 before the first event: the turn has not started yet.
                        follower.problems.append(f"its stream was answered {answer.status_code}")
                        return
            except httpx.TransportError:
                pass  # serve is down, or went down mid-stream
            await asyncio.sleep(RETRY_S)
        await asyncio.gather(*decisions)

    async def decide(self, run: TurnRun, call: str) -> None:
        """Approves `call` after a moment's thought, cut short when an outage begins (a person
        clicks while the API or Temporal is down), retrying what can be retried."""
        follower = self.followers[run.key]
        decided_at = time.monotonic() + self.rng.uniform(*THINK_S)
        # `down` is a plain flag the fault sets: nothing to await on.
        while time.monotonic() < decided_at and not self.down:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        url = f"/v1/turns/{run.workflow_id}/decisions"
        unanswered, outage = False, False
        deadline = time.monotonic() + RPC_PATIENCE_S
        while time.monotonic() < deadline:
            outage = outage or self.down
            try:
                answer = await self.http.post(url, json={"call_id": call, "approved": True})
            except httpx.TransportError:
                follower.answers["no connection"] += 1
                unanswered = outage = True
                await asyncio.sleep(RETRY_S)
                continue
            follower.answers[str(answer.status_code)] += 1
            if answer.status_code >= 500:
                # The update may or may not have reached the turn: the retry says which.
                unanswered = outage = True
                await asyncio.sleep(RETRY_S)
                continue
            if answer.status_code == 200 or (answer.status_code == 409 and unanswered):
                run.sent.add(APPROVAL_STEP)
            else:
                follower.problems.append(
                    f"its decision was answered {answer.status_code}: {answer.text[:200]}"
                )
            break
        run.sends_in_outage += outage
        if APPROVAL_STEP not in run.sent:
            run.sends_lost += 1


async def _sse(answer: httpx.Response) -> AsyncIterator[tuple[int, str, str]]:
    """The events of an SSE answer: (id, event, data); comment lines are skipped."""
    fields: dict[str, str] = {}
    async for line in answer.aiter_lines():
        if not line:
            if "id" in fields:
                yield int(fields["id"]), fields.get("event", ""), fields.get("data", "")
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            fields[name] = value


async def whole_stream(http: httpx.AsyncClient, workflow_id: str) -> list[tuple[int, str]]:
    """The closed turn's stream, from its first event (a finished turn is replayed)."""
    async with http.stream("GET", f"/v1/turns/{workflow_id}/events") as answer:
        return [(event_id, data) async for event_id, _, data in _sse(answer)]


def serve_kills(clients: ApiClients, rng: random.Random) -> FaultPlan:
    """kill -9 of `turnkeeper serve` while a turn waits for its decision; a new one on the
    same port after 1-3 s."""

    async def inject(stack: ChaosStack, runs: list[TurnRun], hits: Counter[str]) -> int:
        await asyncio.sleep(rng.uniform(0.5, 2.0))
        _tally(hits, await aim(stack, runs, ("approval wait",), within_s=15.0))
        clients.down = True
        clients.serve.process.kill()
        await asyncio.sleep(rng.uniform(1.0, 3.0))
        clients.serve.process.start()
        await clients.serve.ready()
        clients.down = False
        return 1

    return inject


def temporal_kills(clients: ApiClients, rng: random.Random) -> FaultPlan:
    """kill -9 of the Temporal server while a turn waits for its decision; restarted on its
    SQLite file after 2-5 s. The API stays up and answers what it cannot do 5xx."""

    async def inject(stack: ChaosStack, runs: list[TurnRun], hits: Counter[str]) -> int:
        await asyncio.sleep(rng.uniform(0.5, 2.0))
        _tally(hits, await aim(stack, runs, ("approval wait",), within_s=15.0))
        clients.down = True
        await stack.kill_server()
        await asyncio.sleep(rng.uniform(2.0, 5.0))
        await stack.start_server()
        clients.down = False
        return 1

    return inject


def followed(plan: FaultPlan, clients: ApiClients, bound_s: float) -> FaultPlan:
    """`plan`, with a client following each turn and deciding its approval."""

    async def inject(stack: ChaosStack, runs: list[TurnRun], hits: Counter[str]) -> int:
        deadline = time.monotonic() + bound_s
        faults, *_ = await asyncio.gather(
            plan(stack, runs, hits), *(clients.follow(run, deadline) for run in runs)
        )
        return faults

    return inject


async def stream_problems(clients: ApiClients, runs: dict[str, str]) -> list[str]:
    """Whether each client read its turn's whole stream once, in order, and its decision was
    applied once and answered as it may be (`runs`: workflow id by key)."""
    problems = []
    for key, workflow_id in runs.items():
        follower = clients.followers.get(key, Follower())
        where = f"turn {key}"
        problems += [f"{where}: {problem}" for problem in follower.problems]
        whole = await whole_stream(clients.http, workflow_id)
        if follower.events != whole:
            read = [event_id for event_id, _ in follower.events]
            problems.append(
                f"{where}: its client read ids {_ranges(read)} of the stream's "
                f"{_ranges([event_id for event_id, _ in whole])}"
            )
        decided = Counter(
            json.loads(data).get("call_id") for data in _of_kind(whole, "approval_decided")
        )
        for data in _of_kind(whole, "approval_requested"):
            call = json.loads(data).get("call_id")
            if decided[call] != 1:
                problems.append(f"{where}: the decision on {call} was applied {decided[call]}×")
    return problems


def _of_kind(events: list[tuple[int, str]], kind: str) -> list[str]:
    return [data for _, data in events if json.loads(data).get("kind") == kind]


def _ranges(ids: list[int]) -> str:
    """`0-7, 7-12` for ids 0..7 then 7..12: where a read repeated or skipped shows."""
    if not ids:
        return "none"
    spans, start = [], ids[0]
    for before, after in itertools.pairwise(ids):
        if after != before + 1:
            spans.append(f"{start}-{before}")
            start = after
    spans.append(f"{start}-{ids[-1]}")
    return ", ".join(spans)


async def http_rows(stack: ChaosStack, sizes: Sizes, rng: random.Random) -> list[RowResult]:
    """The HTTP API row, sized from the matrix's: half its turns, and as many kills of serve
    and of the Temporal server, in turn, as its server-kill row has kills (one each at the quick
    size)."""
    turns, kills = max(3, sizes.turns // 2), sizes.server_kills
    serve, token = serve_process(stack)
    serve.process.start()
    headers = {"Authorization": f"Bearer {token}"}
    timeout = httpx.Timeout(10.0, read=READ_TIMEOUT_S)
    try:
        await serve.ready()
        async with httpx.AsyncClient(base_url=serve.url, headers=headers, timeout=timeout) as http:
            clients = ApiClients(serve, http, rng)
            plan = one_after_another(
                [serve_kills(clients, rng), temporal_kills(clients, rng)] * kills
            )
            keyed = [(key, turn_steps(key, rng)) for key in new_keys(turns, "ht")]
            bound_s = 90.0 * 2 * kills + 60
            result = await run_row(
                stack, "HTTP API: serve and server kill -9, SSE + decisions", keyed,
                followed(plan, clients, bound_s), bound_s, stagger_s=4.0 * turns, rng=rng,
                needs_outage_sends=True, approvals_elsewhere=True,
            )  # fmt: skip
            runs = {verdict.key: f"chaos-{verdict.key}" for verdict in result.verdicts}
            problems = await stream_problems(clients, runs)
            result.own_violations += [f"{result.fault}: {problem}" for problem in problems]
            result.hits["stream reconnects"] += sum(
                f.reconnects for f in clients.followers.values()
            )
            result.hits["decisions retried"] += sum(
                sum(f.answers.values()) - 1 for f in clients.followers.values() if f.answers
            )
            return [result]
    finally:
        serve.process.kill()
