"""A sandboxed call's output as it is produced, published to the turn's event stream as
`tool_output` events (with `agent.stream`), the way a streamed model call publishes its text.

Events travel as batched signals into the turn's history, so each stream publishes at most the
bytes the model will read of it (`TURNKEEPER_SANDBOX_MAX_OUTPUT_BYTES`): a call that prints
without end costs the history no more than one that prints the cap.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Final

from temporalio.contrib.workflow_streams import TopicHandle, WorkflowStreamClient
from turnkeeper.activities.sandbox.bubblewrap import OutputSink
from turnkeeper.contracts.events import TURN_EVENTS_TOPIC, TurnEvent
from turnkeeper.contracts.sandbox_io import SandboxCallInput

BATCH: Final = timedelta(milliseconds=300)


class _Publisher:
    def __init__(self, topic: TopicHandle[TurnEvent], call: SandboxCallInput, cap: int) -> None:
        self._topic = topic
        self._call = call
        self._room = {"stdout": cap, "stderr": cap}
        # A chunk may end inside a UTF-8 character; the decoder keeps the rest for the next.
        self._decoders = {
            name: codecs.getincrementaldecoder("utf-8")("replace") for name in self._room
        }

    def publish(self, stream: str, chunk: bytes) -> None:
        room = self._room[stream]
        if room <= 0:
            return
        self._room[stream] = room - len(chunk)
        text = self._decoders[stream].decode(chunk[:room])
        if not text:
            return
        event = TurnEvent(
            kind="tool_output",
            at=datetime.now(UTC),
            call_id=self._call.call_id,
            tool=self._call.tool,
            stream="stderr" if stream == "stderr" else "stdout",
            text=text,
        )
        self._topic.publish(event)


@asynccontextmanager
async def live_output(call: SandboxCallInput, cap: int) -> AsyncIterator[OutputSink | None]:
    """The sink `bubblewrap.run` feeds, when the turn streams; None when it does not."""
    if not call.stream_output:
        yield None
        return
    async with WorkflowStreamClient.from_within_activity(batch_interval=BATCH) as stream:
        yield _Publisher(stream.topic(TURN_EVENTS_TOPIC, type=TurnEvent), call, cap).publish
