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
