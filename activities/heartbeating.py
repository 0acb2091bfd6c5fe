"""Heartbeats for activities that wait on something slow (a tool call, a remote server)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import timedelta
from typing import TypeVar

from temporalio import activity

_Result = TypeVar("_Result")


async def heartbeating(work: Awaitable[_Result]) -> _Result:
    """Await `work`, heartbeating meanwhile when the activity has a heartbeat timeout, so that
    cancellation reaches a long call and a dead worker is noticed quickly."""
    heartbeat_timeout = activity.info().heartbeat_timeout
    if not heartbeat_timeout:
        return await work
    task = asyncio.ensure_future(work)
    interval = heartbeat_interval(heartbeat_timeout)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=interval)
            if done:
                return task.result()
            activity.heartbeat()
    finally:
        task.cancel()


def heartbeat_interval(heartbeat_timeout: timedelta) -> float:
    # Half the timeout: one late beat is not yet a missed one.
    return max(heartbeat_timeout.total_seconds() / 2, 0.1)
