"""What a turn was started with, as the access rules read it: its current run's `TurnRequest`
(the first event of the run's history) and its `StartedBy` search attribute.

Read per run and kept by run, never by workflow id alone: a later turn started at the same id is
another run, with its own owner and approvers, and must inherit nothing of the earlier one's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from temporalio.api.history.v1 import WorkflowExecutionStartedEventAttributes
from temporalio.client import Client
from temporalio.converter import decode_typed_search_attributes
from temporalio.service import RPCError

from turnkeeper.contracts.names import WORKFLOW_TYPE
from turnkeeper.contracts.search_attributes import STARTED_BY
from turnkeeper.contracts.turn import TurnRequest
from turnkeeper.http.errors import no_turn, rpc_error
from turnkeeper.payloads.keyring import UnreadableContentError

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
    chain: str | None = None
    """The first run id of the run's chain: a decision sent with it applies to this turn or
    fails, never to a later turn started at the same id (None: not known)."""


class Origins:
    """`StartedTurn`s over a Temporal client, each from the first event of the turn's current
    run: one round trip, which says the run's request, its `StartedBy` (set when it started,
    never changed) and the chain it belongs to, all from the same run."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._requests: dict[tuple[str, str], TurnRequest] = {}
        # Each turn as last read, by workflow id: for `known` only.
        self._latest: dict[str, StartedTurn] = {}

    async def known(self, workflow_id: str) -> StartedTurn:
        """The turn as last read, else as `started` reads it now. The turn at the id may have
        changed since: what is decided on it must be sent pinned to its `chain`."""
        latest = self._latest.get(workflow_id)
        return latest if latest is not None else await self.started(workflow_id)

    async def started(self, workflow_id: str) -> StartedTurn:
        """The current run's request and who started it.

        Raises:
            ApiError: 404 for no such turn, or a workflow that is not a turn (a ledger, a
                session, a standing-approvals cache); 502 for another refusal of Temporal.
        """
        started = await self._started_event(workflow_id, None)
        if started.workflow_type.name != WORKFLOW_TYPE:
            raise no_turn(workflow_id)
        # The id the run had when it began (a reset keeps it): the run the request belongs to.
        key = (workflow_id, started.original_execution_run_id)
        if key not in self._requests:
            self._keep(workflow_id, key[1], await self._decoded(workflow_id, started))
        attributes = decode_typed_search_attributes(started.search_attributes)
        turn = StartedTurn(
            self._requests[key], attributes.get(STARTED_BY), started.first_execution_run_id
        )
        if len(self._latest) >= REQUESTS_KEPT:
            del self._latest[next(iter(self._latest))]
        self._latest[workflow_id] = turn
        return turn

    async def run_request(self, workflow_id: str, run_id: str) -> TurnRequest:
        """The `TurnRequest` of one run, from the first event of its history."""
        key = (workflow_id, run_id)
        if key not in self._requests:
            started = await self._started_event(workflow_id, run_id)
            self._keep(workflow_id, run_id, await self._decoded(workflow_id, started))
        return self._requests[key]

    async def _started_event(
        self, workflow_id: str, run_id: str | None
    ) -> WorkflowExecutionStartedEventAttributes:
        """The first event of the run (`run_id` None: the current run), one event asked for."""
        handle = self.client.get_workflow_handle(workflow_id, run_id=run_id)
        try:
            async for event in handle.fetch_history_events(page_size=1):
                return event.workflow_execution_started_event_attributes
        except RPCError as err:
            raise rpc_error(err, workflow_id) from None
        raise no_turn(workflow_id)

    async def _decoded(
        self, workflow_id: str, started: WorkflowExecutionStartedEventAttributes
    ) -> TurnRequest:
        """The run's request.

        Raises:
            ApiError: 404 when this server cannot read it as a `TurnRequest`: one that does
                not validate (started past every client, with the raw CLI: it failed at once) or
                is encrypted with keys this server lacks. Such a turn has no owner or approvers
                the server can check, so it is served to nobody; and one such turn in the
                namespace must not break the listings that read every turn's request.
        """
        payloads = started.input.payloads
        if len(payloads) != 1:
            raise no_turn(workflow_id)
        try:
            [decoded] = await self.client.data_converter.decode(payloads, [TurnRequest])
        # pydantic's ValidationError (a ValueError), an encoding no converter knows (KeyError),
        # data a converter cannot parse (the SDK raises RuntimeError), a key the keyring lacks
        # or content it cannot decrypt.
        except (ValueError, LookupError, RuntimeError, UnreadableContentError):
            raise no_turn(workflow_id) from None
        # JSON null (`binary/null`) decodes to None whatever type is asked for.
        if not isinstance(decoded, TurnRequest):
            raise no_turn(workflow_id)
        return decoded

    def _keep(self, workflow_id: str, run_id: str, request: TurnRequest) -> None:
        if len(self._requests) >= REQUESTS_KEPT:
            del self._requests[next(iter(self._requests))]
        self._requests[(workflow_id, run_id)] = request
