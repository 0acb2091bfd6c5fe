"""The turns of one chaos row: their scripts, their requests, and the caller that answers their
approvals and external calls the way a client does, retrying through outages.

Every turn has the same four iterations, so that a fault lands in every phase: a model call,
an idempotent tool call (`lookup`), a non-idempotent one that needs approval
(`record_payment`), an external call (`ask_user`), and the answer. Tool-call ids are the
fake's stable ones (`toolu_<key>_<step>_0`), so the caller needs no query (queries need a
live worker; a caller in an outage has none).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError
from turnkeeper.contracts.names import (
    SIGNAL_APPROVE,
    SIGNAL_SUBMIT_TOOL_RESULT,
    WORKFLOW_TYPE,
)
from turnkeeper.contracts.search_attributes import TURN_STATE
from turnkeeper.contracts.turn import AgentReport

from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import Step

APPROVAL_STEP, EXTERNAL_STEP = 1, 2
POLL_S = 0.3
# How long the caller retries one RPC through an outage before it counts the send as lost.
RPC_PATIENCE_S = 90.0


def call_id(key: str, step: int) -> str:
    return f"toolu_{key}_{step}_0"


def turn_steps(
    key: str,
    rng: random.Random,
    fault: Step | None = None,
    first_call: tuple[str, dict[str, Any]] | None = None,
) -> list[Step]:
    """The four model answers of a turn; `fault` (a list of replies) is what the first model
    call meets before it is answered; `first_call` replaces the `lookup` call (an MCP tool)."""

    def delay() -> float:
        return rng.uniform(0.2, 1.2)

    steps: list[Step] = [
        fake.slow(fake.tool_calls(first_call or ("lookup", {"query": key})), delay()),
        fake.slow(fake.tool_calls(("record_payment", {"entry": key})), delay()),
        fake.slow(fake.tool_calls(("ask_user", {"question": "Go on?"})), delay()),
        fake.slow(fake.text("done"), delay()),
    ]
    if fault is not None:
        faults = list(fault) if isinstance(fault, Sequence) else [fault]
        steps[0] = [*faults, steps[0]]
    return steps


def turn_request(
    key: str, *, stream: bool = False, extra_tools: Sequence[str] = ()
) -> dict[str, Any]:
    return {
        "agent": {
            "id": "chaos",
            "model": "anthropic:claude-sonnet-4-6",
            "system_prompt": f"A chaos turn. [script:{key}]",
            "tools": ["lookup", "record_payment", *extra_tools],
            "max_iterations": 6,
            "stream": stream,
        },
        "task": {
            "id": key,
            "input": "Look the invoice up, pay it, ask the user, answer.",
            "constraints": {"require_approval": ["record_payment"]},
        },
        "external_tools": [
            {"name": "ask_user", "description": "Ask the user", "input_schema": {"type": "object"}}
        ],
    }


@dataclass
class TurnRun:
    """One turn as its caller saw it."""

    key: str
    workflow_id: str
    outcome: str = "stuck"  # "completed", a failure type, or "stuck"
    report: AgentReport | None = None
    # Decisions and results sent while the server was down, retried (by the SDK's client, then
    # by the caller) until the server took them.
    sends_in_outage: int = 0
    sends_lost: int = 0
    closed_at: float | None = None
    sent: set[int] = field(default_factory=set)
    # Set while a fault sends this turn's decision itself (during the outage it causes).
    held: bool = False
    # Set when another client decides its approval (the HTTP API row's): the caller sends
    # only the external result.
    approvals_elsewhere: bool = False
    # The call the approval is for, when it is not this turn's own (a sub-agent's, decided at
    # the root: `subagent_rows.py`).
    approval_call: str | None = None


async def start_turn(
    client: Client,
    task_queue: str,
    key: str,
    stream: bool,
    extra_tools: Sequence[str] = (),
    request: dict[str, Any] | None = None,
) -> None:
    """Starts the turn of `key`: the matrix's plain turn, or `request` (a row's own shape)."""
    request = request or turn_request(key, stream=stream, extra_tools=extra_tools)
    # A start retried through an outage may find that its first attempt went through.
    with contextlib.suppress(WorkflowAlreadyStartedError):
        await _patiently(
            lambda: client.start_workflow(
                WORKFLOW_TYPE,
                request,
                id=f"chaos-{key}",
                task_queue=task_queue,
            )
        )


async def drive(client: Client, run: TurnRun, deadline: float, poll_s: float = POLL_S) -> None:
    """Answers the turn's approval and external call when it waits for them (looking every
    `poll_s`), then reads its outcome; a turn not closed by `deadline` stays "stuck"."""
    handle = client.get_workflow_handle(run.workflow_id)
    while time.monotonic() < deadline:
        try:
            description = await handle.describe()
        except RPCError:
            await asyncio.sleep(poll_s)
            continue
        if description.status != WorkflowExecutionStatus.RUNNING:
            break
        state = description.typed_search_attributes.get(TURN_STATE)
        if not run.held:
            await _answer(run, state, handle)
        await asyncio.sleep(poll_s)
    else:
        return
    await read_outcome(client, run)


async def send_waiting(client: Client, run: TurnRun, approval: bool) -> None:
    """Sends what the turn was seen waiting for (the approval, or the external result) without
    asking the server first: it may be down."""
    step = APPROVAL_STEP if approval else EXTERNAL_STEP
    if step not in run.sent:
        run.sends_in_outage += 1
        await _send(run, step, client.get_workflow_handle(run.workflow_id))


async def _answer(run: TurnRun, state: str | None, handle: WorkflowHandle[Any, Any]) -> None:
    if (
        state == "awaiting_approval"
        and not run.approvals_elsewhere
        and APPROVAL_STEP not in run.sent
    ):
        await _send(run, APPROVAL_STEP, handle)
    elif state == "awaiting_external" and EXTERNAL_STEP not in run.sent:
        await _send(run, EXTERNAL_STEP, handle)


async def _send(run: TurnRun, step: int, handle: WorkflowHandle[Any, Any]) -> None:
    """Sends the decision or the result, retrying through an outage; never twice once sent."""
    if step == APPROVAL_STEP:
        call = run.approval_call or call_id(run.key, step)
        name, payload = SIGNAL_APPROVE, {"call_id": call, "approved": True}
    else:
        name = SIGNAL_SUBMIT_TOOL_RESULT
        payload = {"call_id": call_id(run.key, step), "output": "yes, go on"}
    try:
        await _patiently(lambda: handle.signal(name, payload))
    except RPCError:
        run.sends_lost += 1
        return
    run.sent.add(step)


async def read_outcome(client: Client, run: TurnRun) -> None:
    """Waits for the turn's end; its outcome (a contract error type when it failed), report."""
    handle = client.get_workflow_handle(run.workflow_id, result_type=AgentReport)
    try:
        run.report = await _patiently(handle.result)
        run.outcome = "completed"
    except WorkflowFailureError as failure:
        cause = failure.cause
        if isinstance(cause, ApplicationError) and cause.details:
            run.outcome = cause.type or "untyped"
            run.report = AgentReport.model_validate(cause.details[0])
        else:
            run.outcome = f"untyped:{type(cause).__name__}"
    run.closed_at = time.monotonic()


async def _patiently(call: Any) -> Any:
    """Retries an RPC through an outage, as a careful client does."""
    deadline = time.monotonic() + RPC_PATIENCE_S
    while True:
        try:
            return await call()
        except RPCError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
