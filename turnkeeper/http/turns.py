"""What the HTTP API does to turns, on the public Python client: `TurnService` over a Temporal
client, and `Turns`, the protocol the app needs (a test gives the app a fake of it).

Errors come out as `ApiError`s carrying the HTTP status that the app answers with.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import JsonValue
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.client.client import TurnHandle, start_turn, turn
from turnkeeper.client.errors import DecisionRefused, InvalidTurnRequest, TurnUnavailable
from turnkeeper.client.events import turn_event_items
from turnkeeper.client.turns import list_waiting
from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.signals import ApproveInput, DecisionRecord, TurnStatus
from turnkeeper.contracts.turn import TurnRequest

# Which intervention a request asks for: the names of the turn's updates.
UPDATE_STEER = "steer"
UPDATE_INTERRUPT = "interrupt"


class ApiError(Exception):
    """A request the API refuses: `status` is the HTTP status, the message says why."""

    def __init__(self, status: int, message: str, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class WaitingApproval:
    """One call waiting for a human's decision, with what the inbox shows beside it."""

    workflow_id: str
    agent_id: str
    call_id: str
    tool: str
    input: dict[str, JsonValue]
    since: datetime
    cost_usd: float
    approvers: list[str] | None


class Turns(Protocol):
    """The turn operations the app needs."""

    async def start(self, request: TurnRequest, workflow_id: str | None) -> str: ...
    async def request(self, workflow_id: str) -> TurnRequest: ...
    async def status(self, workflow_id: str) -> TurnStatus: ...
    async def decisions(self, workflow_id: str) -> list[DecisionRecord]: ...
    async def decide(
        self, workflow_id: str, decision: ApproveInput, key: Ed25519PrivateKey | None
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


class TurnService:
    """`Turns` over a Temporal client (from `turnkeeper.connect()`)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        # A turn's request never changes: read from its history once.
        self._requests: dict[str, TurnRequest] = {}

    async def start(self, request: TurnRequest, workflow_id: str | None) -> str:
        try:
            handle = await start_turn(self.client, request, id=workflow_id)
        except TurnUnavailable as err:
            raise ApiError(409, str(err)) from None
        except InvalidTurnRequest as err:
            raise ApiError(422, str(err)) from None
        return handle.id

    async def request(self, workflow_id: str) -> TurnRequest:
        """The turn's `TurnRequest`, from the first event of its history."""
        if workflow_id not in self._requests:
            handle = self.client.get_workflow_handle(workflow_id)
            try:
                async for event in handle.fetch_history_events():
                    payloads = event.workflow_execution_started_event_attributes.input.payloads
                    [decoded] = await self.client.data_converter.decode(payloads, [TurnRequest])
                    self._requests[workflow_id] = decoded
                    break
            except RPCError as err:
                raise _rpc_error(err, workflow_id) from None
        return self._requests[workflow_id]

    async def status(self, workflow_id: str) -> TurnStatus:
        try:
            return await self._handle(workflow_id).status()
        except RPCError as err:
            raise _rpc_error(err, workflow_id) from None

    async def decisions(self, workflow_id: str) -> list[DecisionRecord]:
        try:
            return await self._handle(workflow_id).decisions()
        except RPCError as err:
            raise _rpc_error(err, workflow_id) from None

    async def decide(
        self, workflow_id: str, decision: ApproveInput, key: Ed25519PrivateKey | None
    ) -> list[DecisionRecord]:
        handle = self._handle(workflow_id)
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
            raise _rpc_error(err, workflow_id) from None

    async def waiting_approvals(self) -> list[WaitingApproval]:
        waiting: list[WaitingApproval] = []
        for found in await list_waiting(self.client):
            if found.status is None:
                continue
            approvers = (await self.request(found.workflow_id)).agent.approver_names()
            waiting.extend(
                WaitingApproval(
                    workflow_id=found.workflow_id,
                    agent_id=found.agent_id,
                    call_id=call.call_id,
                    tool=call.tool,
                    input=call.input,
                    since=call.since,
                    cost_usd=found.status.cost_usd,
                    approvers=approvers,
                )
                for call in found.status.pending
                if call.kind == "approval"
            )
        return waiting

    def events(self, workflow_id: str, after: int | None) -> AsyncIterator[tuple[int, TurnEvent]]:
        return turn_event_items(self.client, workflow_id, after)

    async def running(self, workflow_id: str) -> None:
        """Nothing when the turn runs.

        Raises:
            ApiError: 404 for no such turn, 409 for a turn that has ended.
        """
        try:
            described = await self.client.get_workflow_handle(workflow_id).describe()
        except RPCError as err:
            raise _rpc_error(err, workflow_id) from None
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
            raise _rpc_error(err, handle.id) from None

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
            raise _rpc_error(err, handle.id) from None

    def _handle(self, workflow_id: str) -> TurnHandle:
        return turn(self.client, workflow_id)


def _rpc_error(err: RPCError, workflow_id: str) -> ApiError:
    if err.status == RPCStatusCode.NOT_FOUND:
        return ApiError(404, f"no turn {workflow_id!r}")
    return ApiError(502, f"Temporal refused the request for {workflow_id!r}: {err.message}")
