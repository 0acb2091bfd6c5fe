"""A turn's event stream (`TurnService.events`) as the AI SDK's UI message stream: chunks as the
events arrive, straight from the turn (no status polling for what the events say), until the
turn ends or waits only for approvals the client was asked for (the client answers them in its
next request, whose stream goes on from there). Nothing is kept between requests: any replica
that reaches Temporal serves any request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Final

from pydantic import JsonValue
from temporalio.service import RPCError

from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.http.chat.chunks import Chunk, UiMessageChunks, finish_reason
from turnkeeper.http.chat.transcript import Transcript
from turnkeeper.http.errors import ApiError
from turnkeeper.http.mcp.turn_view import outcome
from turnkeeper.http.turns import TurnService

# The response headers of the SDK's own UI message stream (`UI_MESSAGE_STREAM_HEADERS`).
STREAM_HEADERS: Final = {
    "cache-control": "no-cache",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",  # a proxy must pass each chunk on at once (nginx buffers)
}
# A comment line after this long without a chunk: a turn waiting for a sub-agent or a tool may
# send nothing for minutes, and proxies close idle streams (nginx and AWS ALB at 60 s).
KEEPALIVE_S: Final = 15.0
# How long the stream stays quiet, while approvals it asked for wait, before it asks the turn
# whether those are all it waits for (the event that would say so comes when they are answered).
QUIET_CHECK_S: Final = 1.0
# How long the finish waits for the turn's report (its token counts) after its last event.
REPORT_WAIT_S: Final = 10.0
# How often a quiet stream reads the turn's status while a sub-agent runs.
SUB_AGENT_CHECK_S: Final = 2.0


async def turn_chunks(
    turns: TurnService,
    workflow_id: str,
    after: int | None = None,
    told: dict[str, str] | None = None,
    decided: set[str] | None = None,
    sub_agent_runs: bool = False,
) -> AsyncIterator[Chunk | None]:
    """The UI message chunks of the turn from just after offset `after` (None: its first
    event); None whenever `KEEPALIVE_S` pass without one. `told`: call id → approval id of the
    approvals the client holds; `decided`: those its request just decided; `sub_agent_runs`:
    one of those was a sub-agent's, whose start the stream after `after` does not show."""
    chunks = UiMessageChunks(workflow_id, told, decided)
    results = Transcript(turns, workflow_id)
    late: list[str] = []  # finished calls whose result the transcript did not hold yet
    follow = sub_agent_runs
    last = -1 if after is None else after
    for chunk in chunks.start({"turn_id": workflow_id}):
        yield chunk
    events = turns.events(workflow_id, after)
    pending = asyncio.ensure_future(_next(events))
    quiet = 0.0
    try:
        while True:
            wait = _quiet_check(chunks, follow)
            done, _ = await asyncio.wait({pending}, timeout=wait)
            if not done:
                if wait < KEEPALIVE_S:
                    status = await turns.status(workflow_id)
                    for chunk in chunks.sub_agent_asks(last, status.pending):
                        yield chunk
                    if _only_asked(status, chunks):
                        for chunk in chunks.paused(_figures(workflow_id, status)):
                            yield chunk
                        return
                quiet += wait
                if quiet >= KEEPALIVE_S:
                    quiet = 0.0
                    yield None
                continue
            quiet = 0.0
            item = pending.result()
            if item is None:
                return
            last, event = item
            pending = asyncio.ensure_future(_next(events))
            if event.kind in ("iteration_started", "turn_finished", "turn_failed") and late:
                for call_id in late:
                    found = await results.result(call_id)
                    if found is not None:
                        yield chunks.late_output(call_id, found)
                late.clear()
            if event.kind == "subagent_finished":
                follow = False  # the ones still running are in `chunks.delegated`
            for chunk in await _translated(chunks, results, late, last, event):
                yield chunk
            if event.kind in ("turn_finished", "turn_failed"):
                for chunk in await _ended(turns, chunks, event):
                    yield chunk
                return
            if event.kind == "approval_requested":
                status = await turns.status(workflow_id)
                if _only_asked(status, chunks):
                    for chunk in chunks.paused(_figures(workflow_id, status)):
                        yield chunk
                    return
    finally:
        pending.cancel()


def _quiet_check(chunks: UiMessageChunks, follow: bool) -> float:
    """How long a quiet stream waits before it reads the turn's status: soon while approvals
    it asked for wait and no tool runs (whether they are all the turn waits for), every few
    seconds while a sub-agent runs (its approvals reach no event of this turn), else only
    keep-alives."""
    if chunks.waiting() and not chunks.running:
        return QUIET_CHECK_S
    if chunks.delegated or follow:
        return SUB_AGENT_CHECK_S
    return KEEPALIVE_S


async def sse(chunks: AsyncIterator[Chunk | None]) -> AsyncIterator[str]:
    """`chunks` as the SDK's SSE: one `data:` line each, `[DONE]` last, a comment for None."""
    try:
        async for chunk in chunks:
            yield ": keep-alive\n\n" if chunk is None else f"data: {_json(chunk)}\n\n"
    except (ApiError, RPCError) as err:
        # Temporal failed mid-stream (the response has begun: no status can say it now).
        text = err.message if isinstance(err, ApiError) else f"Temporal refused: {err.message}"
        yield f"data: {_json({'type': 'error', 'errorText': text})}\n\n"
    yield "data: [DONE]\n\n"


def _json(chunk: Chunk) -> str:
    return json.dumps(chunk, separators=(",", ":"))


async def _translated(
    chunks: UiMessageChunks, results: Transcript, late: list[str], offset: int, event: TurnEvent
) -> list[Chunk]:
    """The event's chunks, with what the transcript adds to a call's start or end."""
    call_id = event.call_id or ""
    if event.kind == "subagent_started":
        return chunks.event(offset, event, call_input=await results.call_input(call_id))
    if event.kind in ("tool_call_finished", "subagent_finished"):
        output = await results.result(call_id)
        if output is None and not event.is_error:
            late.append(call_id)
        return chunks.event(offset, event, output=output)
    return chunks.event(offset, event)


def _only_asked(status: TurnStatus, chunks: UiMessageChunks) -> bool:
    """Whether the turn waits, with no tool call of the client's running, only for approvals
    the client was asked for (its own calls' and its sub-agents')."""
    if chunks.running:
        return False
    waiting = {call.call_id for call in status.pending if call.kind == "approval"}
    return bool(waiting) and waiting <= set(chunks.told_approvals)


def _figures(workflow_id: str, status: TurnStatus) -> dict[str, JsonValue]:
    return {
        "turn_id": workflow_id,
        "cost_usd": status.cost_usd,
        "llm_calls": status.llm_calls,
        "tool_calls": status.tool_calls,
        "awaiting_approval": True,
    }


async def _ended(turns: TurnService, chunks: UiMessageChunks, event: TurnEvent) -> list[Chunk]:
    """The finish: the turn's figures from its report (tokens, cost) and how it ended."""
    metadata: dict[str, JsonValue] = {"turn_id": chunks.message_id, "outcome": event.outcome}
    try:
        ended = await asyncio.wait_for(outcome(turns, chunks.message_id), REPORT_WAIT_S)
    except (ApiError, TimeoutError):
        ended = None
    report = None if ended is None else ended.report or (ended.failure and ended.failure.report)
    if report is not None:
        metadata |= {
            "outcome": report.outcome if ended and ended.report else event.outcome,
            "cost_usd": report.cost_usd,
            "input_tokens": report.usage.input_tokens,
            "output_tokens": report.usage.output_tokens,
            "llm_calls": report.llm_calls,
            "tool_calls": report.tool_calls,
        }
    elif event.cost_usd is not None:
        metadata["cost_usd"] = event.cost_usd
    if event.kind == "turn_failed":
        metadata["outcome"] = "failed"
        metadata["error_type"] = event.error_type
        return chunks.failed(f"{event.error_type}: {event.message}", metadata)
    return chunks.finished(finish_reason(event.outcome), metadata)


async def _next(events: AsyncIterator[tuple[int, TurnEvent]]) -> tuple[int, TurnEvent] | None:
    try:
        return await anext(events)
    except StopAsyncIteration:
        return None
