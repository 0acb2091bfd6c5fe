"""A turn's event stream (Temporal workflow streams), read from the first event to the last.

It reads the stream from offset 0, so a reader can attach at any time, also to a finished turn,
and sees the turn's story before what comes next. `TurnHandle.events()` and the console's live
view (`turnkeeper watch`) both read it here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Final

from temporalio.client import Client
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from turnkeeper.contracts.events import TURN_EVENTS_TOPIC, TurnEvent

# Workflow streams' own default: each poll is an update in the turn's history, so a reader that
# polls sooner after each batch of events writes more of them.
DEFAULT_POLL_COOLDOWN: Final = timedelta(milliseconds=100)


async def turn_events(client: Client, workflow_id: str) -> AsyncIterator[TurnEvent]:
    """Every event of the turn from the first, then live ones until the turn ends."""
    stream = WorkflowStreamClient.create(client, workflow_id)
    async for item in stream.subscribe(TURN_EVENTS_TOPIC, from_offset=0, result_type=TurnEvent):
        yield item.data
        if item.data.kind in ("turn_finished", "turn_failed"):
            return


async def turn_event_items(
    client: Client,
    workflow_id: str,
    after: int | None = None,
    poll_cooldown: timedelta = DEFAULT_POLL_COOLDOWN,
) -> AsyncIterator[tuple[int, TurnEvent]]:
    """Each event with its offset in the turn's stream, from just after offset `after` (None:
    from the first), then live ones until the turn ends. The offsets are the stream's own, so a
    reader that resumes after the last one it saw misses and repeats nothing (the HTTP API's
    `Last-Event-ID`). `poll_cooldown`: the pause after events arrive before the next poll (a
    caught-up poll waits in the turn until there is something new)."""
    stream = WorkflowStreamClient.create(client, workflow_id)
    start = 0 if after is None else after + 1
    async for item in stream.subscribe(
        TURN_EVENTS_TOPIC, from_offset=start, result_type=TurnEvent, poll_cooldown=poll_cooldown
    ):
        yield item.offset, item.data
        if item.data.kind in ("turn_finished", "turn_failed"):
            return
