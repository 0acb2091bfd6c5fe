"""The `wait_limit` local activity: the worker's bound on one `wait` (`TURNKEEPER_MAX_WAIT_S`),
asked by a turn when its agent calls the built-in `wait` tool. Workflow code reads no
environment, so the bound reaches it as an activity result, recorded in history: a replay, or a
worker started later with another bound, sees the bound the wait was checked against."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from temporalio import activity
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.waits import (
    ACTIVITY_WAIT_LIMIT,
    DEFAULT_MAX_WAIT_S,
    MAX_WAIT_ENV,
    WaitLimit,
    WaitLimitInput,
)


def max_wait_s(env: Mapping[str, str]) -> float:
    """The bound `env` sets, else the default (30 days).

    Raises:
        ApplicationError: not retried: the variable is not a positive number of seconds.
    """
    text = env.get(MAX_WAIT_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_WAIT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ApplicationError(
            f"{MAX_WAIT_ENV}={text[:40]!r} is not a positive number of seconds",
            non_retryable=True,
        )
    return value


@activity.defn(name=ACTIVITY_WAIT_LIMIT)
async def wait_limit(call: WaitLimitInput) -> WaitLimit:
    """The worker's bound on one wait, for the call `call` names."""
    return WaitLimit(max_wait_s=max_wait_s(os.environ))
