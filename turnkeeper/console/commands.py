"""What each console command does, as async functions returning the exit code; `cli.py` only
parses the command line and runs one of these.

With `--json` only the JSON goes to stdout (so it can be piped); the workflow id, links and
pending calls a human reads then go to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import JsonValue, TypeAdapter
from rich.console import Console
from rich.text import Text
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from turnkeeper.client.approvals import list_standing, revoke
from turnkeeper.client.attachments import with_attachments
from turnkeeper.client.client import DEFAULT_SIGNATURE_LIFETIME, TurnHandle
from turnkeeper.client.client import turn as turn_by_id
from turnkeeper.client.connection import connect
from turnkeeper.client.errors import DecisionRefused, UnsignableDecision
from turnkeeper.client.requests import RunOptions, build_request
from turnkeeper.client.signatures import signed_decision
from turnkeeper.client.turns import (
    QUERY_TIMEOUT,
    TurnOutcome,
    check_caller_request,
    follow,
    list_waiting,
    read_status,
    short_id,
    start_turn_workflow,
    turn_handle,
    turn_workflow_id,
    waiting_calls,
)
from turnkeeper.console import render
from turnkeeper.console import watch as live_view
from turnkeeper.console.signing import Signer
from turnkeeper.console.target import Target
from turnkeeper.console.terminal import CommandError, err, out
from turnkeeper.contracts.budget_extension import BudgetRequest
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.names import QUERY_TRANSCRIPT, SIGNAL_APPROVE
from turnkeeper.contracts.signals import ALL_PENDING, ApproveInput, PendingCall
from turnkeeper.contracts.turn import AgentReport

_MESSAGES = TypeAdapter(list[Message])


@dataclass(frozen=True)
class Connection:
    """The connection flags every command takes; None defers to `temporalio.envconfig`."""

    address: str | None
    namespace: str | None
    ui_url: str


@dataclass(frozen=True)
class RunFlags:
    task_queue: str
    workflow_id: str | None
    wait: bool
    as_json: bool
    attachments: tuple[Path, ...] = ()


async def run(connection: Connection, options: RunOptions, flags: RunFlags) -> int:
    """Validate and start a turn, then (unless `--no-wait`) follow it to its report."""
    suffix = short_id()
    request = with_attachments(build_request(options, short_id=suffix), flags.attachments)
    workflow_id = flags.workflow_id or turn_workflow_id(request.agent.id, suffix)
    check_caller_request(request, workflow_id)  # before a connection: a refused --id needs none
    client, target = await _connect(connection)
    handle = await start_turn_workflow(
        client, request, workflow_id=workflow_id, task_queue=flags.task_queue
    )
    render.started(_info(flags.as_json), workflow_id, target)
    if not flags.wait:
        if flags.as_json:
            _emit({"workflow_id": workflow_id, "url": target.workflow_url(workflow_id)})
        return 0
    return await _follow_to_end(handle, target, flags.as_json)


async def read_transcript(handle: WorkflowHandle[Any, Any]) -> list[Message]:
    """A turn's messages so far, by its `transcript` query."""
    await read_status(handle)  # the same clear errors as `status` for a wrong id or no worker
    raw = await handle.query(QUERY_TRANSCRIPT, rpc_timeout=QUERY_TIMEOUT)
    return _MESSAGES.validate_python(raw)


async def result(connection: Connection, workflow_id: str, as_json: bool) -> int:
    client, target = await _connect(connection)
    return await _follow_to_end(turn_handle(client, workflow_id), target, as_json)


async def standing(connection: Connection, agent_id: str, as_json: bool) -> int:
    client, _ = await _connect(connection)
    approvals = await list_standing(client, agent_id)
    if as_json:
        _emit([approval.model_dump(mode="json") for approval in approvals])
        return 0
    if not approvals:
        out.print(f"{agent_id} has no standing approvals.")
    for approval in approvals:
        by = f" by {approval.approver}" if approval.approver else ""
        why = f": {approval.reason}" if approval.reason else ""
        out.print(f"{approval.tool}  approved{by} at {approval.at:%Y-%m-%d %H:%M}{why}")
    return 0


async def revoke_standing(connection: Connection, agent_id: str, tool: str, by: str) -> int:
    client, _ = await _connect(connection)
    if not await revoke(client, agent_id, tool, by):
        raise CommandError(f"{agent_id} has no standing approval for {tool!r}.")
    out.print(f"revoked the standing approval of {tool} for {agent_id}")
    return 0


async def watch(connection: Connection, workflow_id: str) -> int:
    client, _ = await _connect(connection)
    state = await live_view.watch(client, workflow_id, out)
    return 1 if state.failed else 0


async def status(
    connection: Connection, workflow_id: str, as_json: bool, full: bool = False
) -> int:
    client, target = await _connect(connection)
    turn_status = await read_status(turn_handle(client, workflow_id))
    if as_json:
        _emit(turn_status.model_dump(mode="json"))
    else:
        render.status(out, workflow_id, turn_status, target, full=full)
    return 0


async def transcript(connection: Connection, workflow_id: str, as_json: bool) -> int:
    client, _ = await _connect(connection)
    messages = await read_transcript(turn_handle(client, workflow_id))
    if as_json:
        _emit(_MESSAGES.dump_python(messages, mode="json"))
    else:
        render.transcript(out, messages)
    return 0


async def decide(
    connection: Connection,
    workflow_id: str,
    call_id: str,
    decision: ApproveInput,
    signer: Signer | None = None,
) -> int:
    """Decide `call_id` (or every pending approval) after checking it is pending.

    Each call goes through `TurnHandle.approve` or `reject` (the `decide` update), signed or
    not, so that a refusal (a turn whose approvers need a signature, a name it does not list, a
    key it does not know) is an error here: as an `approve` signal the turn ignored it and this
    command still said "approved". Signed, each call gets a signature of its own.
    """
    client, _ = await _connect(connection)
    handle = turn_by_id(client, workflow_id)
    calls = waiting_calls(await read_status(handle.workflow), "approval", call_id)
    verb = "approved" if decision.approved else "rejected"
    signed = f", signed by {decision.approver}" if signer is not None else ""
    for call in calls:
        await _decide(handle, decision.model_copy(update={"call_id": call.call_id}), signer)
        out.print(_decided(verb, call, workflow_id) + signed, soft_wrap=True)
    return 0


async def print_decision(
    connection: Connection,
    workflow_id: str,
    call_id: str,
    decision: ApproveInput,
    signer: Signer | None,
) -> int:
    """`--print`: the `approve` payload on stdout (signed when there is a key), for `temporal
    workflow signal` or the Web UI's signal form. Nothing is sent, so `all` becomes `*`. To sign,
    the turn is asked (by query) for its agent, the call's tool and input and the signing format
    it verifies: the signature binds them."""
    target = ALL_PENDING if call_id == "all" else call_id
    payload = decision.model_copy(update={"call_id": target})
    if signer is not None:
        client, _ = await _connect(connection)
        turn_status = await read_status(turn_handle(client, workflow_id))
        if target != ALL_PENDING:
            waiting_calls(turn_status, "approval", target)  # a clear error unless it waits
        try:
            payload = signed_decision(
                payload, turn_status, workflow_id, signer.key, signer.expires_in
            )
        except DecisionRefused as refusal:
            raise CommandError(str(refusal)) from None
    text = json.dumps(payload.model_dump(mode="json", exclude_none=True), ensure_ascii=False)
    out.out(text, highlight=False)  # no markup, no wrapping: it must stay parseable
    err.print(
        f"send it with: temporal workflow signal --workflow-id {workflow_id} "
        f"--name {SIGNAL_APPROVE} --input '<the JSON above>'",
        soft_wrap=True,
    )
    return 0


async def submit(
    connection: Connection, workflow_id: str, call_id: str, output: str, is_error: bool
) -> int:
    """Send `submit_tool_result`: `output` as JSON when it parses, else as a string."""
    if call_id == "all":
        raise CommandError("submit takes one call id: each external call has its own result.")
    client, _ = await _connect(connection)
    handle = turn_by_id(client, workflow_id)
    [call] = waiting_calls(await read_status(handle.workflow), "external", call_id)
    with reaching_the_turn(f"signal {workflow_id!r}"):
        await handle.submit(call_id, parse_output(output), is_error=is_error)
    out.print(_decided("submitted a result for", call, workflow_id), soft_wrap=True)
    return 0


async def pending(
    connection: Connection, task_queue: str | None, as_json: bool, full: bool = False
) -> int:
    """Every turn waiting for a human or a caller, with the commands that decide each call."""
    client, target = await _connect(connection)
    turns = await list_waiting(client, task_queue)
    if as_json:
        _emit(
            [
                {
                    "workflow_id": turn.workflow_id,
                    "agent_id": turn.agent_id,
                    "status": turn.status.model_dump(mode="json") if turn.status else None,
                }
                for turn in turns
            ]
        )
    elif not turns:
        out.print("No turn is waiting for a human.")
    else:
        render.waiting_turns(out, turns, target, full=full)
    return 0


def parse_output(text: str) -> JsonValue:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def show_outcome(outcome: TurnOutcome, target: Target, as_json: bool) -> int:
    """Print the report (or the failure and its partial report); the exit code of the turn."""
    if as_json:
        _emit(_outcome_json(outcome))
    elif outcome.report is not None:
        render.report(out, outcome.report)
    elif outcome.failure is not None:
        render.failure(out, outcome.failure)
    return 0 if outcome.report is not None else 1


async def _follow_to_end(
    handle: WorkflowHandle[Any, AgentReport], target: Target, as_json: bool
) -> int:
    info = _info(as_json)

    async def announce(calls: list[PendingCall]) -> None:
        render.pending(info, handle.id, calls, target)

    async def announce_budget(request: BudgetRequest) -> None:
        render.budget_request(info, handle.id, request, target)

    try:
        outcome = await follow(handle, announce, on_budget=announce_budget)
    except asyncio.CancelledError:  # Ctrl-C: only the following stops, never the turn
        again = target.ours("result", handle.id)
        info.print(Text(f"Stopped following; the turn goes on. Again: {again}"), soft_wrap=True)
        raise
    return show_outcome(outcome, target, as_json)


def _outcome_json(outcome: TurnOutcome) -> Any:
    if outcome.report is not None:
        return outcome.report.model_dump(mode="json")
    assert outcome.failure is not None
    partial = outcome.failure.report
    return {
        "failure": {"type": outcome.failure.type, "message": outcome.failure.message},
        "report": partial.model_dump(mode="json") if partial else None,
    }


async def _connect(connection: Connection) -> tuple[Client, Target]:
    client = await connect(address=connection.address, namespace=connection.namespace)
    target = Target(
        address=client.service_client.config.target_host,
        namespace=client.namespace,
        ui_url=connection.ui_url,
    )
    return client, target


@contextlib.contextmanager
def reaching_the_turn(action: str) -> Iterator[None]:
    """`Could not <action>` for a turn that a decision, result or extension no longer reaches:
    it may have ended between the status check and what was sent."""
    try:
        yield
    except RPCError as error:
        raise CommandError(f"Could not {action}: {error.message}") from None


async def _decide(handle: TurnHandle, decision: ApproveInput, signer: Signer | None) -> None:
    """One call's decision through the handle (signed with the signer's key, if any)."""
    key = signer.key if signer is not None else None
    lifetime = signer.expires_in if signer is not None else DEFAULT_SIGNATURE_LIFETIME
    call_id, approver, reason = decision.call_id, decision.approver, decision.reason
    try:
        with reaching_the_turn(f"decide on {handle.id!r}"):
            if decision.approved:
                await handle.approve(
                    call_id,
                    approver=approver,
                    reason=reason,
                    remember=decision.remember,
                    key=key,
                    expires_in=lifetime,
                )
            else:
                await handle.reject(
                    call_id, reason=reason, approver=approver, key=key, expires_in=lifetime
                )
    except UnsignableDecision as problem:
        raise CommandError(str(problem)) from None
    except DecisionRefused as refusal:
        raise CommandError(f"The turn refused the decision on {call_id}: {refusal}") from None


def _decided(verb: str, call: PendingCall, workflow_id: str) -> str:
    return f"{verb} {call.call_id} ({call.tool}) of {workflow_id}"


def _info(as_json: bool) -> Console:
    return err if as_json else out


def _emit(value: Any) -> None:
    # Console.out: no markup, no highlighting, no wrapping, so the JSON stays parseable.
    out.out(json.dumps(value, indent=2, ensure_ascii=False), highlight=False)
