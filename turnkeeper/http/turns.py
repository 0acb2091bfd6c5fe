"""What the HTTP API does to turns, on the public Python client: `TurnService` over a Temporal
client, and `Turns`, the protocol the app needs (a test gives the app a fake of it).

Errors come out as `ApiError`s (`turnkeeper.http.errors`) carrying the HTTP status that the app
answers with.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, Protocol

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus
from temporalio.service import RPCError

from turnkeeper.client.client import TurnHandle, start_turn, turn
from turnkeeper.client.errors import DecisionRefused, InvalidTurnRequest, TurnUnavailable
from turnkeeper.client.events import turn_event_items
from turnkeeper.client.tenants import TenantError, set_caps, tenant_spend
from turnkeeper.client.turns import list_waiting
from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.names import (
    DEFAULT_TASK_QUEUE,
    SA_STARTED_BY,
    SA_TURN_STATE,
    TASK_QUEUE_ENV,
    WORKFLOW_TYPE,
)
from turnkeeper.contracts.search_attributes import AGENT_ID, COST_USD_KEY, STARTED_BY, TURN_STATE
from turnkeeper.contracts.signals import ApproveInput, DecisionRecord, TurnStatus
from turnkeeper.contracts.tenants import TenantCaps, TenantSpend
from turnkeeper.contracts.turn import AgentReport, TurnRequest
from turnkeeper.http.approvals import WaitingApproval, waiting_approvals
from turnkeeper.http.errors import ApiError, rpc_error
from turnkeeper.http.origins import Origins, StartedTurn

# How soon the API's event stream polls again after events arrive. A decision's event comes
# right after the `approval_requested` the client decides on: at the stream's default (100 ms) it
# would wait that long for the next poll. Shorter costs one update in the turn's history per
# batch of events read, as the default does, only batched over 20 ms instead of 100.
EVENTS_POLL_COOLDOWN: Final = timedelta(milliseconds=20)

# Which intervention a request asks for: the names of the turn's updates.
UPDATE_STEER = "steer"
UPDATE_INTERRUPT = "interrupt"


@dataclass(frozen=True)
class TurnSummary:
    """One turn as the visibility listing shows it (its search attributes)."""

    workflow_id: str
    run_id: str
    state: str | None
    agent_id: str
    cost_usd: float
    started_by: str | None
    started: datetime


class Turns(Protocol):
    """The turn operations the app needs."""

    async def start(
        self, request: TurnRequest, workflow_id: str | None, started_by: str
    ) -> str: ...
    async def request(self, workflow_id: str) -> TurnRequest: ...
    async def started(self, workflow_id: str) -> StartedTurn: ...
    async def known(self, workflow_id: str) -> StartedTurn: ...
    async def run_request(self, workflow_id: str, run_id: str) -> TurnRequest: ...
    async def list_turns(
        self, state: str | None, started_by: str | None, limit: int
    ) -> list[TurnSummary]: ...
    async def status(self, workflow_id: str) -> TurnStatus: ...
    async def decisions(self, workflow_id: str) -> list[DecisionRecord]: ...
    async def decide(
        self,
        workflow_id: str,
        decision: ApproveInput,
        key: Ed25519PrivateKey | None,
        chain: str | None = None,
    ) -> list[DecisionRecord]: ...
    async def waiting_approvals(self) -> list[WaitingApproval]: ...
    def events(
        self, workflow_id: str, after: int | None
    ) -> AsyncIterator[tuple[int, TurnEvent]]: ...
    async def running(self, workflow_id: str) -> None: ...
    async def steering(
        self,
        workflow_id: str,
        update: str,
        payload: dict[str, str],
        key: Ed25519PrivateKey | None,
    ) -> Any: ...
    async def cancel(
        self, workflow_id: str, author: str | None = None, key: Ed25519PrivateKey | None = None
    ) -> None: ...
    async def tenant(self, name: str) -> TenantSpend: ...
    async def set_tenant_caps(self, name: str, caps: TenantCaps) -> TenantSpend: ...


class TurnService:
    """`Turns` over a Temporal client (from `turnkeeper.connect()`)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._origins = Origins(client)

    async def start(self, request: TurnRequest, workflow_id: str | None, started_by: str) -> str:
        try:
            handle = await start_turn(self.client, request, id=workflow_id, started_by=started_by)
        except TurnUnavailable as err:
            raise ApiError(409, str(err)) from None
        except InvalidTurnRequest as err:
            raise ApiError(422, str(err)) from None
        except RPCError as err:  # a cluster without the StartedBy attribute says so here
            raise ApiError(502, f"Temporal refused to start the turn: {err.message}") from None
        return handle.id

    async def request(self, workflow_id: str) -> TurnRequest:
        """The turn's `TurnRequest`, from the first event of its current run's history."""
        return (await self.started(workflow_id)).request

    async def started(self, workflow_id: str) -> StartedTurn:
        return await self._origins.started(workflow_id)

    async def known(self, workflow_id: str) -> StartedTurn:
        """The turn as last read here, else as `started` reads it: only for what is sent pinned
        to its `chain` (a later turn at the id refuses it)."""
        return await self._origins.known(workflow_id)

    async def run_request(self, workflow_id: str, run_id: str) -> TurnRequest:
        return await self._origins.run_request(workflow_id, run_id)

    async def list_turns(
        self, state: str | None, started_by: str | None, limit: int
    ) -> list[TurnSummary]:
        """The newest `limit` turns (in `state`, started by `started_by`, when given)."""
        query = f"WorkflowType = {_literal(WORKFLOW_TYPE)}"
        if state is not None:
            query += f" AND {SA_TURN_STATE} = {_literal(state)}"
        if started_by is not None:
            query += f" AND {SA_STARTED_BY} = {_literal(started_by)}"
        try:
            found = [e async for e in self.client.list_workflows(query, limit=limit)]
        except RPCError as err:
            raise ApiError(502, f"Temporal refused the listing of turns: {err.message}") from None
        summaries = [_summary(execution) for execution in found]
        return sorted(summaries, key=lambda s: s.started, reverse=True)

    async def status(self, workflow_id: str) -> TurnStatus:
        try:
            return await self._handle(workflow_id).status()
        except RPCError as err:
            raise rpc_error(err, workflow_id) from None

    async def decisions(self, workflow_id: str) -> list[DecisionRecord]:
        try:
            return await self._handle(workflow_id).decisions()
        except RPCError as err:
            raise rpc_error(err, workflow_id) from None

    async def decide(
        self,
        workflow_id: str,
        decision: ApproveInput,
        key: Ed25519PrivateKey | None,
        chain: str | None = None,
    ) -> list[DecisionRecord]:
        """Sends the `decide` update; with `chain` (`StartedTurn.chain`), to that turn only.

        Raises:
            DecisionRefused: The turn refused it (its validator says why).
            ApiError: 404 when the turn has ended or `chain` is no longer the id's turn; 502.
        """
        handle = TurnHandle(
            self.client,
            self.client.get_workflow_handle(
                workflow_id, first_execution_run_id=chain, result_type=AgentReport
            ),
        )
        try:
            if decision.approved:
                return await handle.approve(
                    decision.call_id,
                    approver=decision.approver,
                    reason=decision.reason,
                    remember=decision.remember,
                    input=decision.input,
                    key=key,
                )
            return await handle.reject(
                decision.call_id, reason=decision.reason, approver=decision.approver, key=key
            )
        except RPCError as err:
            raise rpc_error(err, workflow_id) from None

    async def waiting_approvals(self) -> list[WaitingApproval]:
        return await waiting_approvals(await list_waiting(self.client), self.started)

    def events(self, workflow_id: str, after: int | None) -> AsyncIterator[tuple[int, TurnEvent]]:
        return turn_event_items(self.client, workflow_id, after, EVENTS_POLL_COOLDOWN)

    async def running(self, workflow_id: str) -> None:
        """Nothing when the turn runs.

        Raises:
            ApiError: 404 for no such turn, 409 for a turn that has ended.
        """
        try:
            described = await self.client.get_workflow_handle(workflow_id).describe()
        except RPCError as err:
            raise rpc_error(err, workflow_id) from None
        if described.status != WorkflowExecutionStatus.RUNNING:
            state = described.status.name.lower() if described.status else "closed"
            raise ApiError(409, f"turn {workflow_id!r} has ended ({state})")

    async def steering(
        self,
        workflow_id: str,
        update: str,
        payload: dict[str, str],
        key: Ed25519PrivateKey | None,
    ) -> Any:
        await self.running(workflow_id)
        handle = self._handle(workflow_id)
        try:
            if update == UPDATE_STEER:
                return await handle.steer(payload["message"], author=payload["author"], key=key)
            return await handle.interrupt(payload["reason"], author=payload["author"], key=key)
        except DecisionRefused as err:
            raise ApiError(409, f"the turn refused {update}: {err}") from None
        except RPCError as err:
            raise rpc_error(err, handle.id) from None

    async def cancel(
        self, workflow_id: str, author: str | None = None, key: Ed25519PrivateKey | None = None
    ) -> None:
        """Temporal's cancellation; with `key`, the `cancel` update signed as `author`.

        Raises:
            ApiError: 404 no such turn, 409 it has ended or refused the signed cancel.
        """
        await self.running(workflow_id)
        handle = self._handle(workflow_id)
        try:
            await handle.cancel(author=author, key=key)
        except DecisionRefused as err:
            raise ApiError(409, f"the turn refused cancel: {err}") from None
        except RPCError as err:
            raise rpc_error(err, handle.id) from None

    async def tenant(self, name: str) -> TenantSpend:
        try:
            return await tenant_spend(self.client, name)
        except TenantError as err:
            raise ApiError(404, str(err)) from None

    async def set_tenant_caps(self, name: str, caps: TenantCaps) -> TenantSpend:
        # The queue the worker reads, as `start_turn` chooses it: the ledger runs there.
        queue = os.environ.get(TASK_QUEUE_ENV) or DEFAULT_TASK_QUEUE
        return await set_caps(self.client, name, caps, queue)

    def _handle(self, workflow_id: str) -> TurnHandle:
        return turn(self.client, workflow_id)


def _literal(value: str) -> str:
    """`value` as a string of a visibility query.

    Raises:
        ApiError: 500 for a value with a quote or backslash (an identity name that the token
            file allowed before names were checked): no escaping is trusted to keep it a string.
    """
    if any(char in value for char in "'\"\\") or not value.isprintable():
        raise ApiError(500, f"{value!r} cannot be used in a visibility query")
    return f"'{value}'"


def _summary(execution: WorkflowExecution) -> TurnSummary:
    attributes = execution.typed_search_attributes
    return TurnSummary(
        workflow_id=execution.id,
        run_id=execution.run_id,
        state=attributes.get(TURN_STATE),
        agent_id=attributes.get(AGENT_ID) or "",
        cost_usd=attributes.get(COST_USD_KEY) or 0.0,
        started_by=attributes.get(STARTED_BY),
        started=execution.start_time,
    )
