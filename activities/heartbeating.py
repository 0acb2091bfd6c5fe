"""Heartbeats for activities that wait on something slow (a tool call, a remote server)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import timedelta
from typing import TypeVar

from temporalio import activity

_Result = TypeVar("_Result")


async def heartbeating(work: Awaitable[_Result], every_s: float | None = None) -> _Result:
    """Await `work`, heartbeating meanwhile when the activity has a heartbeat timeout, so that
    cancellation reaches a long call and a dead worker is noticed quickly.

    `work` runs in the activity's own task (a cancellation reaches it directly) and a side task
    beats on a timer (every half heartbeat timeout unless `every_s` says otherwise): a fast call
    costs one timer, not a wait loop per call."""
    heartbeat_timeout = activity.info().heartbeat_timeout
    if not heartbeat_timeout:
        return await work
    beats = asyncio.create_task(_beat_every(every_s or heartbeat_interval(heartbeat_timeout)))
    try:
        return await work
    finally:
        beats.cancel()


async def _beat_every(interval: float) -> None:
    while True:
        await asyncio.sleep(interval)
        activity.heartbeat()


def heartbeat_interval(heartbeat_timeout: timedelta) -> float:
    # Half the timeout: one late beat is not yet a missed one.
    return max(heartbeat_timeout.total_seconds() / 2, 0.1)
