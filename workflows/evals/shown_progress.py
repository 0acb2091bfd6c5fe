"""What an evaluation run shows in the Web UI's list: its `EvalProgress` ("37/400") and
`CostUsd` search attributes, written at most once every `SHOW_EVERY`.

A write per case cost a run more than anything else it adds to its turns: each upsert is a
command, an event and a write of the server's visibility store, and cases of a large run end
many times a second (measured by `python -m bench.evals`: a fifth of the run's wall time). So a
case that ends within `SHOW_EVERY` of the last write leaves it to one durable timer, which writes
what the run has then; a run writes what it has before it continues as new or ends, so the list
is never left behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Final

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.search_attributes import COST_USD_KEY, EVAL_PROGRESS, eval_progress

SHOW_EVERY: Final = timedelta(seconds=2)


class ShownProgress:
    """The run's search attributes, written now or by the timer of the next write."""

    def __init__(self, ended: Callable[[], int], total: int, spent: Callable[[], float]) -> None:
        self._ended = ended
        self._total = total
        self._spent = spent
        self._shown_at: datetime | None = None
        self._timer: asyncio.Task[None] | None = None

    def case_ended(self, *, at_once: bool = False) -> None:
        """Shows the run now, or within `SHOW_EVERY` of its last write (`at_once`: now, as a
        run started before `SHOW_EVERY` did after every case)."""
        now = workflow.now()
        if at_once or self._shown_at is None or now - self._shown_at >= SHOW_EVERY:
            self.show()
        elif self._timer is None:
            self._timer = asyncio.create_task(self._show_at(self._shown_at + SHOW_EVERY - now))

    def show(self) -> None:
        """Writes what the run has now."""
        self._shown_at = workflow.now()
        workflow.upsert_search_attributes(
            [
                COST_USD_KEY.value_set(self._spent()),
                EVAL_PROGRESS.value_set(eval_progress(self._ended(), self._total)),
            ]
        )

    def flush(self) -> None:
        """Writes what a waiting timer would have: before the run continues as new or ends."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self.show()

    async def _show_at(self, delay: timedelta) -> None:
        await workflow.sleep(delay)
        self._timer = None
        self.show()
