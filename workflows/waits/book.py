"""The waits a turn has in progress and the events delivered to it.

Workflow state, not carried across continue-as-new: a wait lives inside one tool dispatch, and
a turn continues as new only between iterations, when none is in progress.
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.waits import AgentEvent, WaitingFor


@dataclass
class Wait:
    """One `wait` call in progress, and what ended it early (if anything did)."""

    status: WaitingFor
    woken_by: str | None = None
    event: AgentEvent | None = None

    @property
    def over(self) -> bool:
        return self.woken_by is not None or self.event is not None


class Waits:
    """The turn's waits in progress, by call id, and its events: those not yet waited for, and
    every idempotency id seen (a second delivery of one is dropped)."""

    def __init__(self) -> None:
        self._active: dict[str, Wait] = {}
        self._unread: list[AgentEvent] = []
        self._seen: set[str] = set()

    def deliver(self, event: AgentEvent, *, begun: bool) -> bool:
        """Takes `event`; whether it was new. One that arrived before the turn began is the one
        that started it (signal-with-start delivers it with the start): its task says what it
        brought, so no wait reads it again. Otherwise the first wait for its name gets it, or
        it waits for one."""
        if event.idempotency_id in self._seen:
            return False
        self._seen.add(event.idempotency_id)
        if not begun:
            return True
        for wait in self._active.values():
            if wait.status.event == event.event and not wait.over:
                wait.event = event
                return True
        self._unread.append(event)
        return True

    def take(self, name: str) -> AgentEvent | None:
        """The earliest event called `name` that arrived before anything waited for it."""
        for index, event in enumerate(self._unread):
            if event.event == name:
                return self._unread.pop(index)
        return None

    def open(self, status: WaitingFor) -> Wait:
        wait = Wait(status=status)
        self._active[status.call_id] = wait
        return wait

    def close(self, call_id: str) -> None:
        self._active.pop(call_id, None)

    def wake(self, why: str) -> None:
        """Ends every wait in progress early, saying why (a steer came)."""
        for wait in self._active.values():
            if not wait.over:
                wait.woken_by = why

    def waiting(self) -> bool:
        return bool(self._active)

    def listing(self) -> list[WaitingFor]:
        return [wait.status for wait in self._active.values()]
