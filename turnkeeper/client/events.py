"""A turn's event stream (Temporal workflow streams), read from the first event to the last.

It reads the stream from offset 0, so a reader can attach at any time, also to a finished turn,
and sees the turn's story before what comes next. `TurnHandle.events()` and the console's live
view (`turnkeeper watch`) both read it here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from temporalio.client import Client
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from turnkeeper.contracts.events import TURN_EVENTS_TOPIC, TurnEvent


async def turn_events(client: Client, workflow_id: str) -> AsyncIterator[TurnEvent]:
    """Every event of the turn from the first, then live ones until the turn ends."""
    stream = WorkflowStreamClient.create(client, workflow_id)
    async for item in stream.subscribe(TURN_EVENTS_TOPIC, from_offset=0, result_type=TurnEvent):
        yield item.data
        if item.data.kind in ("turn_finished", "turn_failed"):
            return


async def turn_event_items(
    client: Client, workflow_id: str, after: int | None = None
) -> AsyncIterator[tuple[int, TurnEvent]]:
    """Each event with its offset in the turn's stream, from just after offset `after` (None:
    from the first), then live ones until the turn ends. The offsets are the stream's own, so a
    reader that resumes after the last one it saw misses and repeats nothing (the HTTP API's
    `Last-Event-ID`)."""
    stream = WorkflowStreamClient.create(client, workflow_id)
    start = 0 if after is None else after + 1
    async for item in stream.subscribe(TURN_EVENTS_TOPIC, from_offset=start, result_type=TurnEvent):
        yield item.offset, item.data
        if item.data.kind in ("turn_finished", "turn_failed"):
            return
