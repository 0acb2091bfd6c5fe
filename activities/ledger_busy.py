"""When a ledger workflow (a rate-limit key's, a tenant's) is too busy to take an update now, so
that its caller pauses and asks again instead of failing its model call's attempt.

Many model calls of one hot key or one heavy tenant ask one workflow at once; the server admits
only a few updates in flight per workflow (10 by default) and refuses the rest with
RESOURCE_EXHAUSTED, and an update that arrives while the ledger continues as new is aborted
(ABORTED, "workflow update was aborted") or finds no running workflow for a moment
(FAILED_PRECONDITION, NOT_FOUND). None of them took the update, so asking again is safe.
"""

from __future__ import annotations

import random
from typing import Final

from temporalio.service import RPCError, RPCStatusCode

BUSY: Final = frozenset(
    {
        RPCStatusCode.RESOURCE_EXHAUSTED,
        RPCStatusCode.UNAVAILABLE,
        RPCStatusCode.FAILED_PRECONDITION,
        RPCStatusCode.NOT_FOUND,
        RPCStatusCode.ABORTED,
    }
)
# The pause before asking again: short, doubling, jittered so that the refused callers do not
# come back together.
FIRST_PAUSE_S: Final = 0.05
LONGEST_PAUSE_S: Final = 1.0


def is_busy(err: RPCError) -> bool:
    """Whether the ledger refused the update without taking it (ask again after a pause)."""
    return err.status in BUSY or "update was aborted" in str(err)


def pause_s(attempt: int) -> float:
    """The jittered pause before the `attempt`-th new ask (0 first)."""
    return min(LONGEST_PAUSE_S, FIRST_PAUSE_S * 2**attempt) * (0.5 + random.random())
