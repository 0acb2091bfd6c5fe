"""`FakeTurns`: the turn operations of the HTTP API held in memory, for the app's unit tests
(no Temporal server): one turn waiting for approval, what was sent to it, and its events; the
turns a listing finds; tenants and their caps."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.signals import ApproveInput, DecisionRecord, PendingCall, TurnStatus
from turnkeeper.contracts.tenants import TenantCaps, TenantSpend
from turnkeeper.contracts.turn import TurnRequest

from tests.unit.builders import request
from turnkeeper.client.errors import DecisionRefused
from turnkeeper.http.errors import ApiError, no_turn
from turnkeeper.http.turns import StartedTurn, TurnSummary, WaitingApproval

SINCE = datetime(2026, 1, 1, tzinfo=UTC)
TURN_ID = "turn-1"


class FakeTurns:
    """One turn, `turn_id` (`TURN_ID` unless given), started by `started_by`, whose call
    `call-1` (`write_file`) waits for approval; `listed`: what the visibility listing finds
    (with `requests` by run)."""

    def __init__(
        self,
        approvers: list[Any] | None = None,
        events: int = 5,
        started_by: str | None = None,
        turn_id: str = TURN_ID,
    ) -> None:
        self.turn_id = turn_id
        agent: dict[str, Any] = {"tools": ["write_file"]}
        if approvers is not None:
            agent["approvers"] = approvers
        self.turn_request = request(agent=agent)
        self.started_by = started_by
        self.listed: list[TurnSummary] = []
        self.requests: dict[str, TurnRequest] = {}
        self.tenants: dict[str, TenantCaps] = {}
        self.pending = [
            PendingCall(
                call_id="call-1",
                tool="write_file",
                input={"path": "a.md", "content": "x"},
                kind="approval",
                since=SINCE,
            )
        ]
        self.decided: list[tuple[ApproveInput, Ed25519PrivateKey | None]] = []
        self.starts: list[tuple[TurnRequest, str | None, str]] = []
        self.updates: list[tuple[str, dict[str, str]]] = []
        self.keys: list[Ed25519PrivateKey | None] = []
        self.finished = False
        # The turn's chain (its first run id), and the chain each decision was sent to.
        self.chain = "run-1"
        self.chains: list[str | None] = []
        # What the turn answers the next decision with instead of applying it, when set.
        self.refusal: Exception | None = None
        # The turn as the service last read it (`known`), when it differs from the current one.
        self.hint: StartedTurn | None = None
        self.event_count = events
        self.event_pause_s = 0.0

    def _known(self, workflow_id: str) -> None:
        if workflow_id != self.turn_id:
            raise no_turn(workflow_id)

    async def start(self, request: TurnRequest, workflow_id: str | None, started_by: str) -> str:
        self.starts.append((request, workflow_id, started_by))
        return workflow_id or "turn-new"

    async def request(self, workflow_id: str) -> TurnRequest:
        self._known(workflow_id)
        return self.turn_request

    async def started(self, workflow_id: str) -> StartedTurn:
        self._known(workflow_id)
        return StartedTurn(self.turn_request, self.started_by, self.chain)

    async def known(self, workflow_id: str) -> StartedTurn:
        return self.hint if self.hint is not None else await self.started(workflow_id)

    async def run_request(self, workflow_id: str, run_id: str) -> TurnRequest:
        if workflow_id not in self.requests:
            raise no_turn(workflow_id)
        return self.requests[workflow_id]

    async def list_turns(
        self, state: str | None, started_by: str | None, limit: int
    ) -> list[TurnSummary]:
        found = [
            t
            for t in self.listed
            if (state is None or t.state == state)
            and (started_by is None or t.started_by == started_by)
        ]
        return sorted(found, key=lambda t: t.started, reverse=True)[:limit]

    async def status(self, workflow_id: str) -> TurnStatus:
        self._known(workflow_id)
        return TurnStatus(state="awaiting_approval", pending=self.pending, cost_usd=0.25)

    async def decisions(self, workflow_id: str) -> list[DecisionRecord]:
        return [
            DecisionRecord(call_id=d.call_id, tool="write_file", approved=d.approved, at=SINCE)
            for d, _ in self.decided
        ]

    async def decide(
        self,
        workflow_id: str,
        decision: ApproveInput,
        key: Ed25519PrivateKey | None,
        chain: str | None = None,
    ) -> list[DecisionRecord]:
        self.chains.append(chain)
        if chain != self.chain or self.finished:  # as Temporal answers a pinned update
            raise no_turn(workflow_id)
        if self.refusal is not None:
            raise self.refusal
        # As the `decide` validator refuses: a call that does not wait.
        if not any(call.call_id == decision.call_id for call in self.pending):
            raise DecisionRefused(f"no pending call {decision.call_id!r}")
        self.decided.append((decision, key))
        self.pending = []
        return [
            DecisionRecord(
                call_id=decision.call_id,
                tool="write_file",
                approved=decision.approved,
                approver=decision.approver,
                reason=decision.reason,
                edited=decision.input is not None,
                signed=key is not None,
                at=SINCE,
            )
        ]

    async def waiting_approvals(self) -> list[WaitingApproval]:
        return [
            WaitingApproval(
                workflow_id=self.turn_id,
                agent_id=self.turn_request.agent.id,
                call_id=call.call_id,
                tool=call.tool,
                input=call.input,
                since=call.since,
                cost_usd=0.25,
                approvers=self.turn_request.agent.approver_names(),
                started_by=self.started_by,
            )
            for call in self.pending
        ]

    async def events(
        self, workflow_id: str, after: int | None
    ) -> AsyncIterator[tuple[int, TurnEvent]]:
        start = 0 if after is None else after + 1
        for offset in range(start, self.event_count):
            kind = "turn_finished" if offset == self.event_count - 1 else "iteration_started"
            await asyncio.sleep(self.event_pause_s)
            yield offset, TurnEvent(kind=kind, at=SINCE, iteration=offset)

    async def running(self, workflow_id: str) -> None:
        self._known(workflow_id)
        if self.finished:
            raise ApiError(409, f"turn {workflow_id!r} has ended (completed)")

    async def steering(
        self,
        workflow_id: str,
        update: str,
        payload: dict[str, str],
        key: Ed25519PrivateKey | None,
    ) -> Any:
        await self.running(workflow_id)
        self.keys.append(key)
        self.updates.append((update, payload))
        return {"accepted": True, "iteration": 2}

    async def cancel(
        self, workflow_id: str, author: str | None = None, key: Ed25519PrivateKey | None = None
    ) -> None:
        await self.running(workflow_id)
        self.keys.append(key)
        self.updates.append(("cancel", {"author": author} if author else {}))

    async def tenant(self, name: str) -> TenantSpend:
        if name not in self.tenants:
            raise ApiError(404, f"no tenant {name!r}")
        return TenantSpend(
            tenant=name,
            caps=self.tenants[name],
            day="2026-01-01",
            spent_day_usd=0.0,
            month="2026-01",
            spent_month_usd=0.0,
            reserved_usd=0.0,
            in_flight=0,
            as_of=SINCE,
        )

    async def set_tenant_caps(self, name: str, caps: TenantCaps) -> TenantSpend:
        self.tenants[name] = caps
        return await self.tenant(name)
