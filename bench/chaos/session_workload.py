"""The sessions of the chaos matrix's session row (`session_rows.py`): their agent, their model,
and the caller that sends their messages the way a careful client does.

Every turn of a session: a model call, `record_payment` (not idempotent: the ledger counts its
runs), a model call, `lookup`, a model call that answers. Tool inputs are long, so that from
the second turn on the conversation outgrows `agent.compaction`'s limit and a summary call
compacts it.

How a bill finds its call: the model's answers are a function of the request (the turn and
the call it is at, read off the last message), and each states its output tokens as
`turn × 1000 + call` (a summary: `turn × 1000 + 500 + a digest of the request`). A compacted
request has fewer messages than the one before it, so the matrix's `(script, step)` would
name two calls alike; this names each once, and its turn.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio.client import WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.service import RPCError
from turnkeeper.contracts.names import UPDATE_SEND
from turnkeeper.contracts.session import SendResult
from turnkeeper.workflows.llm.compaction import SUMMARY_INSTRUCTIONS

from bench.chaos.stack import ChaosStack
from bench.chaos.workload import RPC_PATIENCE_S, TurnRun, read_outcome
from tests.fakes import fake_anthropic as fake
from tests.fakes.anthropic_replies import JsonDict, MessageReply, Reply
from turnkeeper.client.sessions import SessionHandle, start_session

MODEL = "anthropic:claude-sonnet-4-6"
TOOLS = ("record_payment", "lookup")  # the calls of every turn, in order
# Tool inputs of ~1.2 KB: a turn adds ~1,200 tokens, so the second turn passes the limit.
FILLER = "ledger line " * 100
COMPACTION = {"strategy": "summarize", "max_input_tokens": 2_000}
TURN_TEXT = re.compile(r"Turn (\d+):")
_ANSWERING = re.compile(r"answers now:\nTurn (\d+):")
# Output tokens of a summary call, past its turn's thousands: `is_summary` tells them apart.
SUMMARY_CALLS = 500


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
            summary = fake.text(
                f"Summary before turn {turn}.", usage=_billed(turn, SUMMARY_CALLS + digest)
            )
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
    found = TURN_TEXT.search(_texts([last]))
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


def is_summary(output_tokens: int) -> bool:
    """Whether a bill of this row's model is a summary call's."""
    return output_tokens % 1000 >= SUMMARY_CALLS


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
