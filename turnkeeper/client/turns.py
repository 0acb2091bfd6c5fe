"""Client-side operations on turns: start one, follow it to its end, read what waits for a
human, and find every turn that does. Only the contract's names and JSON are used, so anything
done here can also be done with the `temporal` CLI."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from pydantic import ValidationError
from temporalio.client import (
    Client,
    WorkflowExecution,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
)
from temporalio.common import Priority, SearchAttributeKey
from temporalio.exceptions import (
    ApplicationError,
    CancelledError,
    TerminatedError,
    WorkflowAlreadyStartedError,
)
from temporalio.exceptions import TimeoutError as TemporalTimeoutError
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.client.attachments import store_attachments
from turnkeeper.client.errors import InvalidTurnRequest, TurnUnavailable
from turnkeeper.contracts.budget_extension import BudgetRequest
from turnkeeper.contracts.names import QUERY_STATUS, SA_AGENT_ID, SA_TURN_STATE, WORKFLOW_TYPE
from turnkeeper.contracts.search_attributes import identity_search_attributes
from turnkeeper.contracts.signals import PendingCall, PendingKind, TurnStatus
from turnkeeper.contracts.turn import AgentReport, TurnRequest
from turnkeeper.contracts.turn_ids import TURN_ID_MAX_CHARS, turn_id_problem
from turnkeeper.ground.logs import get_logger

WAITING_QUERY: Final = (
    f'({SA_TURN_STATE} = "awaiting_approval" OR {SA_TURN_STATE} = "awaiting_external" '
    f'OR {SA_TURN_STATE} = "awaiting_budget") AND ExecutionStatus = "Running"'
)
# Turns parked by the built-in `wait` tool (`turnkeeper waiting`).
TIMED_WAIT_QUERY: Final = f'{SA_TURN_STATE} = "waiting" AND ExecutionStatus = "Running"'
# A query is answered by a worker; without one it would block until the server gives up.
QUERY_TIMEOUT: Final = timedelta(seconds=10)
# How many waiting turns `list_waiting` asks for their status at once.
STATUS_QUERIES_AT_ONCE: Final = 128

log = get_logger(__name__)

_NOT_IN_TURN_IDS: Final = re.compile(r"[^A-Za-z0-9._:@-]")

OnPending = Callable[[list[PendingCall]], Awaitable[None]]
OnBudget = Callable[[BudgetRequest], Awaitable[None]]


@dataclass(frozen=True)
class TurnFailure:
    """Why a turn did not complete: the error type of the contract (or how it was closed)."""

    type: str
    message: str
    report: AgentReport | None


@dataclass(frozen=True)
class TurnOutcome:
    workflow_id: str
    report: AgentReport | None = None
    failure: TurnFailure | None = None


@dataclass(frozen=True)
class WaitingTurn:
    workflow_id: str
    agent_id: str
    started: datetime | None
    status: TurnStatus | None


def short_id() -> str:
    return uuid.uuid4().hex[:8]


def turn_workflow_id(agent_id: str, suffix: str) -> str:
    """The default id of a turn of `agent_id`: `turn-<agent id>-<suffix>`, in the turn shape."""
    return suffixed_turn_id(f"turn-{agent_id}", suffix)


def suffixed_turn_id(base: str, suffix: str) -> str:
    """`<base>-<suffix>` in the turn shape (`contracts/turn_ids.py`): characters a turn id may
    not have become `-`, and `base` is cut so the whole fits."""
    fitted = _NOT_IN_TURN_IDS.sub("-", base)[: TURN_ID_MAX_CHARS - len(suffix) - 1]
    return f"{fitted}-{suffix}"


async def start_turn_workflow(
    client: Client,
    request: TurnRequest,
    *,
    workflow_id: str,
    task_queue: str,
    started_by: str | None = None,
) -> WorkflowHandle[Any, AgentReport]:
    """Start one `AgentTurnWorkflow`: the one way every client of ours starts a turn (the
    runtime's own nested turns start in workflow code).

    Raises:
        InvalidTurnRequest: `workflow_id` is not a turn id a caller may give (the runtime keeps
            it, or it is not of the turn shape), the request sets `parent`, or an attachment is
            refused (unreadable, of a type its models do not take, over a size limit).
        TurnUnavailable: A workflow with this id is already running.
    """
    check_caller_request(request, workflow_id)
    # Before the start: the bytes go to the content store, and history gets their references.
    request = await store_attachments(client, request)
    try:
        return await client.start_workflow(
            WORKFLOW_TYPE,
            request_payload(request),
            id=workflow_id,
            task_queue=task_queue,
            result_type=AgentReport,
            static_summary=request.summary(),
            search_attributes=identity_search_attributes(request, started_by),
            # A tenant's workflow tasks too get their fair share (its activities say so anyway).
            priority=Priority(fairness_key=request.tenant) if request.tenant else Priority.default,
        )
    except WorkflowAlreadyStartedError:
        raise TurnUnavailable(f"A turn with id {workflow_id!r} is already running.") from None


def check_caller_request(request: TurnRequest, workflow_id: str) -> None:
    """Refuses what only the runtime may choose: an id it keeps (or not of the turn shape) and
    `parent` (which would show the turn inside another turn's pending list).

    Raises:
        InvalidTurnRequest: The message says which and why.
    """
    problem = turn_id_problem(workflow_id)
    if problem is not None:
        raise InvalidTurnRequest(f"invalid turn request: {problem}")
    if request.parent is not None:
        raise InvalidTurnRequest(
            "invalid turn request: parent: is set by the runtime on a sub-agent's turn; "
            "leave it out"
        )


def given_request(
    request: TurnRequest | Mapping[str, Any] | None, fields: Mapping[str, Any]
) -> TurnRequest:
    """The request a caller gave: a `TurnRequest`, its JSON, or (`request` None) its fields.

    Raises:
        TypeError: Both a request and fields.
        InvalidTurnRequest: It does not validate (the message names the field).
    """
    if request is not None and fields:
        raise TypeError("give the request or its fields, not both")
    try:
        if isinstance(request, TurnRequest):
            return request
        return TurnRequest.model_validate(fields if request is None else request)
    except ValidationError as error:
        raise InvalidTurnRequest(f"invalid turn request: {error}") from None


def request_payload(request: TurnRequest) -> dict[str, Any]:
    """Only what the caller set: the Web UI shows the request as written, and history does not
    carry every default of the contract (the workflow applies them). The history's messages stay
    whole: a content block's `type` is a default too, and without it a block is unreadable."""
    payload = request.model_dump(mode="json", exclude_defaults=True)
    if not isinstance(request.task.input, str):
        # Blocks stay whole, as the history's do: their `type` is a default too.
        payload["task"]["input"] = [b.model_dump(mode="json") for b in request.task.input]
    if request.history:
        payload["history"] = [message.model_dump(mode="json") for message in request.history]
    return payload


def turn_handle(client: Client, workflow_id: str) -> WorkflowHandle[Any, AgentReport]:
    return client.get_workflow_handle(workflow_id, result_type=AgentReport)


async def read_status(handle: WorkflowHandle[Any, Any]) -> TurnStatus:
    """The `status` query.

    Raises:
        TurnUnavailable: No such turn, or no worker answered.
    """
    try:
        return await handle.query(QUERY_STATUS, result_type=TurnStatus, rpc_timeout=QUERY_TIMEOUT)
    except RPCError as err:
        raise TurnUnavailable(_rpc_problem(err, handle.id)) from None
    except WorkflowQueryFailedError as err:
        raise TurnUnavailable(f"The status query of {handle.id!r} failed: {err}") from None


def _rpc_problem(err: RPCError, workflow_id: str) -> str:
    if err.status == RPCStatusCode.NOT_FOUND:
        return f"No turn with id {workflow_id!r} in this namespace."
    if err.status == RPCStatusCode.DEADLINE_EXCEEDED:
        return (
            f"No worker answered for turn {workflow_id!r}: is a worker running on its task "
            "queue (`python worker.py`)?"
        )
    return f"Temporal refused the request for {workflow_id!r}: {err.message}"


def waiting_calls(status: TurnStatus, kind: PendingKind, call_id: str) -> list[PendingCall]:
    """The pending calls of `kind` that `call_id` names (`all`: every one of them).

    Raises:
        TurnUnavailable: Nothing of that kind is pending under that id; says what is.
    """
    of_kind = [call for call in status.pending if call.kind == kind]
    chosen = of_kind if call_id == "all" else [c for c in of_kind if c.call_id == call_id]
    if not chosen and kind == "approval" and call_id != "all":
        # A decision on one call also answers its MCP server's question (never with `all`).
        chosen = [c for c in status.pending if c.kind == "elicitation" and c.call_id == call_id]
    if chosen:
        return chosen
    wanted = "approval" if kind == "approval" else "an external result"
    if call_id == "all":
        problem = f"Nothing in this turn waits for {wanted}."
    else:
        problem = f"Call {call_id!r} is not waiting for {wanted}."
    if not status.pending:
        raise TurnUnavailable(f"{problem} The turn ({status.state}) has no pending calls.")
    listing = ", ".join(f"{c.call_id} ({c.tool}, waits for {c.kind})" for c in status.pending)
    raise TurnUnavailable(f"{problem} Pending: {listing}.")


async def follow(
    handle: WorkflowHandle[Any, AgentReport],
    on_pending: OnPending,
    poll_s: float = 0.5,
    on_budget: OnBudget | None = None,
) -> TurnOutcome:
    """Wait for the turn's end, calling `on_pending` once for each call that starts waiting, and
    `on_budget` once for each budget request (state `awaiting_budget`).

    The `status` query is polled every `poll_s` while the turn moves, and less often once it has
    sat still for a while (a turn may wait a day for an approval; each query costs the worker).
    """
    result = asyncio.ensure_future(handle.result())
    announced: set[str] = set()
    pacing = _Pacing(poll_s)
    try:
        while not result.done():
            status = await status_if_any(handle)
            fresh = [c for c in status.pending if c.call_id not in announced] if status else []
            if fresh:
                announced.update(call.call_id for call in fresh)
                await on_pending(fresh)
            request = status.budget_request if status else None
            asked = f"budget request {request.number}" if request else ""
            if on_budget is not None and request is not None and asked not in announced:
                announced.add(asked)
                await on_budget(request)
            await asyncio.wait({result}, timeout=pacing.next(status))
        return outcome_of(handle.id, result)
    finally:
        result.cancel()


class _Pacing:
    """Poll intervals: `base` until the status has not changed for `QUIET_S`, then growing."""

    QUIET_S: Final = 10.0
    MAX_S: Final = 5.0

    def __init__(self, base: float) -> None:
        self.base = base
        self.interval = base
        self.last: tuple[str, ...] = ()
        self.since = time.monotonic()

    def next(self, status: TurnStatus | None) -> float:
        seen = (status.state, *(c.call_id for c in status.pending)) if status else self.last
        if seen != self.last:
            self.last, self.since, self.interval = seen, time.monotonic(), self.base
        elif time.monotonic() - self.since > self.QUIET_S:
            self.interval = min(self.MAX_S, self.interval * 1.5)
        return self.interval


async def status_if_any(handle: WorkflowHandle[Any, Any]) -> TurnStatus | None:
    # A missed poll only delays the announcement of a pending call; the result is what counts.
    try:
        return await handle.query(QUERY_STATUS, result_type=TurnStatus, rpc_timeout=QUERY_TIMEOUT)
    except (RPCError, WorkflowQueryFailedError) as err:
        log.debug("status poll failed", workflow_id=handle.id, error=str(err))
        return None


def outcome_of(workflow_id: str, result: asyncio.Future[AgentReport]) -> TurnOutcome:
    """The report, or the failure with its partial report, of a finished `handle.result()`."""
    try:
        return TurnOutcome(workflow_id, report=result.result())
    except WorkflowFailureError as err:
        return TurnOutcome(workflow_id, failure=_failure(err))
    except RPCError as err:
        raise TurnUnavailable(_rpc_problem(err, workflow_id)) from None


def _failure(err: WorkflowFailureError) -> TurnFailure:
    cause = err.cause
    if isinstance(cause, ApplicationError):
        return TurnFailure(cause.type or "ApplicationError", cause.message, _report(cause.details))
    if isinstance(cause, CancelledError):
        return TurnFailure("Cancelled", "the turn was cancelled", _report(cause.details))
    if isinstance(cause, TerminatedError):
        return TurnFailure("Terminated", cause.message or "the turn was terminated", None)
    if isinstance(cause, TemporalTimeoutError):
        return TurnFailure("TimedOut", "the workflow run timed out", None)
    return TurnFailure(type(cause).__name__, str(cause), None)


def _report(details: Any) -> AgentReport | None:
    try:
        return AgentReport.model_validate(details[0]) if details else None
    except ValidationError:
        return None


async def list_waiting(
    client: Client, task_queue: str | None = None, waiting_query: str = WAITING_QUERY
) -> list[WaitingTurn]:
    """Every running turn whose `TurnState` says it waits for a human or a caller (or, with
    `TIMED_WAIT_QUERY`, for its `wait` call's time or event)."""
    query = waiting_query + (f' AND TaskQueue = "{task_queue}"' if task_queue else "")
    agent_key = SearchAttributeKey.for_keyword(SA_AGENT_ID)
    # The statuses are asked all at once (a few at a time): a turn whose worker is gone answers
    # only when its query times out, and one by one those waits would add up.
    asking = asyncio.Semaphore(STATUS_QUERIES_AT_ONCE)

    async def waiting_turn(execution: WorkflowExecution) -> WaitingTurn:
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        async with asking:
            status = await status_if_any(handle)
        return WaitingTurn(
            workflow_id=execution.id,
            agent_id=execution.typed_search_attributes.get(agent_key) or "",
            started=execution.start_time,
            status=status,
        )

    found = [execution async for execution in client.list_workflows(query)]
    return list(await asyncio.gather(*(waiting_turn(execution) for execution in found)))
