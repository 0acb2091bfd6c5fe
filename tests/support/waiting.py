"""Waiting for a fact instead of sleeping for a guessed time: poll a reading until it says what
the test waits for. The bound is generous (a slow, shared CI machine may take many times longer
than a laptop) and only there to fail with the last reading instead of hanging.

Hand-written rather than tenacity (not a dependency here): a retry library retries a call that
raises; a test polls a reading until a predicate holds and, failing, must say which fact never
came and what it read last, which is this whole helper."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from temporalio.service import RPCError

T = TypeVar("T")

WITHIN_S = 60.0
EVERY_S = 0.05


async def until(
    read: Callable[[], Awaitable[T]],
    done: Callable[[T], object],
    what: str,
    within_s: float = WITHIN_S,
    every_s: float = EVERY_S,
) -> T:
    """Reads until `done(reading)`; returns that reading. A server that refuses the reading for
    now (RPCError: not found yet, not polled yet) counts as not done."""
    last: T | RPCError | None = None
    deadline = asyncio.get_running_loop().time() + within_s
    while asyncio.get_running_loop().time() < deadline:
        try:
            last = await read()
        except RPCError as refused:
            last = refused
        else:
            if done(last):
                return last
        await asyncio.sleep(every_s)
    raise AssertionError(f"never happened within {within_s:g} s: {what}; last reading: {last!r}")


async def within(
    step: Awaitable[T],
    what: str,
    within_s: float,
    reading: Callable[[], Awaitable[Any]],
) -> T:
    """Awaits one step of a long test, bounded: a step that never ends fails the test with what
    `reading` reads at that moment (the state of the workflows involved), instead of a bare
    timeout of the whole test that says neither which step stalled nor where."""
    # Not wait_for: a client call cancelled at the deadline raises its own error (the SDK turns
    # an update's cancellation into WorkflowUpdateRPCTimeoutOrCancelledError), not TimeoutError.
    task = asyncio.ensure_future(step)
    done, _ = await asyncio.wait({task}, timeout=within_s)
    if done:
        return task.result()
    standing = await reading()
    task.cancel()
    raise AssertionError(f"stalled for {within_s:g} s: {what}; at that moment: {standing}")
