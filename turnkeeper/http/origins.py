"""What a turn was started with, as the access rules read it: its current run's `TurnRequest`
(the first event of the run's history) and its `StartedBy` search attribute.

Read per run and kept by run, never by workflow id alone: a later turn started at the same id is
another run, with its own owner and approvers, and must inherit nothing of the earlier one's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Final

from temporalio.client import Client, WorkflowExecutionDescription
from temporalio.service import RPCError

from turnkeeper.contracts.names import WORKFLOW_TYPE
from turnkeeper.contracts.search_attributes import STARTED_BY
from turnkeeper.contracts.turn import TurnRequest
from turnkeeper.http.errors import no_turn, rpc_error

# Requests kept in memory, by run. Past this many, the oldest is read again when asked (a
# long-running server meets every turn of a namespace).
REQUESTS_KEPT: Final = 4096
# How many histories are read at once when many turns are looked at together.
HISTORIES_AT_ONCE: Final = 16


@dataclass(frozen=True)
class StartedTurn:
    """What a turn was started with, as its current run's history and Temporal say."""

    request: TurnRequest
    started_by: str | None
    """The `StartedBy` search attribute: the identity that started it through the API."""


class Origins:
    """`StartedTurn`s over a Temporal client; each run's request read from its history once."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._requests: dict[tuple[str, str], TurnRequest] = {}
        # The run each turn had when last seen: while it stays the current one, a turn costs one
        # `describe`; a turn never seen has its history read beside that `describe`, not after.
        self._runs: dict[str, str] = {}

    async def started(self, workflow_id: str) -> StartedTurn:
        """The current run's request and who started it.

        Raises:
            ApiError: 404 for no such turn, or a workflow that is not a turn (a ledger, a
                session, a standing-approvals cache); 502 for another refusal of Temporal.
        """
        if workflow_id in self._runs:
            described = await self._describe(workflow_id)
        else:
            described, first = await asyncio.gather(
                self._describe(workflow_id),
                self._first_request(workflow_id, None),
                return_exceptions=True,
            )
            if isinstance(described, BaseException):
                raise described
            if described.workflow_type == WORKFLOW_TYPE and isinstance(first, tuple):
                run_id, request = first
                if run_id == described.run_id:  # else a new run began in between: read it
                    self._keep(workflow_id, run_id, request)
        if described.workflow_type != WORKFLOW_TYPE:
            raise no_turn(workflow_id)
        if len(self._runs) >= REQUESTS_KEPT:
            del self._runs[next(iter(self._runs))]
        self._runs[workflow_id] = described.run_id
        request = await self.run_request(workflow_id, described.run_id)
        return StartedTurn(request, described.typed_search_attributes.get(STARTED_BY))

    async def run_request(self, workflow_id: str, run_id: str) -> TurnRequest:
        """The `TurnRequest` of one run, from the first event of its history."""
        key = (workflow_id, run_id)
        if key not in self._requests:
            _, request = await self._first_request(workflow_id, run_id)
            self._keep(workflow_id, run_id, request)
        return self._requests[key]

    async def _describe(self, workflow_id: str) -> WorkflowExecutionDescription:
        try:
            return await self.client.get_workflow_handle(workflow_id).describe()
        except RPCError as err:
            raise rpc_error(err, workflow_id) from None

    async def _first_request(self, workflow_id: str, run_id: str | None) -> tuple[str, TurnRequest]:
        """The run id and request of the run's started event (`run_id` None: the current run)."""
        handle = self.client.get_workflow_handle(workflow_id, run_id=run_id)
        try:
            async for event in handle.fetch_history_events():
                started = event.workflow_execution_started_event_attributes
                [decoded] = await self.client.data_converter.decode(
                    started.input.payloads, [TurnRequest]
                )
                # The id the run had when it began (a reset keeps it): the run it belongs to.
                return run_id or started.original_execution_run_id, decoded
        except RPCError as err:
            raise rpc_error(err, workflow_id) from None
        raise no_turn(workflow_id)

    def _keep(self, workflow_id: str, run_id: str, request: TurnRequest) -> None:
        if len(self._requests) >= REQUESTS_KEPT:
            del self._requests[next(iter(self._requests))]
        self._requests[(workflow_id, run_id)] = request
