"""Waiting for a turn to ask for something: `TurnHandle.wait_for_approval`.

Polls the `status` query, as `follow` does, rather than reading the event stream: a status
answers at once for a call that began to wait before the caller looked.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Final

from turnkeeper.client.turns import status_if_any
from turnkeeper.contracts.signals import PendingCall, PendingKind

if TYPE_CHECKING:
    from turnkeeper.client.client import TurnHandle

FIRST_POLL_S: Final = 0.05
LONGEST_POLL_S: Final = 0.5
_ENDED: Final = ("completed", "failed", "cancelled")


async def wait_for_pending(
    handle: TurnHandle, kind: PendingKind, within: float | timedelta, tool: str | None
) -> PendingCall:
    """The first call of `handle`'s turn waiting as `kind` (and for `tool`, if given).

    Raises:
        TimeoutError: None within `within`.
        TurnError: The turn failed first.
        LookupError: The turn ended first without one.
    """
    seconds = within.total_seconds() if isinstance(within, timedelta) else float(within)
    deadline = time.monotonic() + seconds
    pause = FIRST_POLL_S
    what = f"a {tool} call" if tool else "a call"
    while True:
        status = await status_if_any(handle.workflow)
        if status is not None:
            for call in status.pending:
                if call.kind == kind and (tool is None or call.tool == tool):
                    return call
            if status.state in _ENDED:
                report = await handle.result()  # raises the turn's error if it failed
                raise LookupError(
                    f"turn {handle.id} ended ({report.outcome}) without {what} waiting for "
                    f"{'an approval' if kind == 'approval' else 'its result'}"
                )
        if time.monotonic() + pause > deadline:
            raise TimeoutError(
                f"turn {handle.id}: no {what[2:]} waited for "
                f"{'an approval' if kind == 'approval' else 'its result'} within {seconds:g} s"
            )
        await asyncio.sleep(pause)
        pause = min(pause * 2, LONGEST_POLL_S)
