"""The turn's event stream in bounded memory: what a late subscriber can still read.

Two costs, measured with `python -m bench.parked_memory` (bench/README.md):

- Each item of a workflow stream is a protobuf `Payload`; made on its own, one owns an upb
  arena of its own (about 1.5 KiB of native memory for about 100 bytes of event). The items of
  one iteration are built inside one container message here, so they share its arena (about
  0.6 KiB each). The bytes of every item stay exactly the same, so this changes nothing that
  history or a subscriber sees.
- The stream keeps every item until the turn ends, and carries them all through continue-as-new:
  5 items per iteration, so about 8 KiB per iteration held by a parked turn. From its
  `RETAINED_ITERATIONS + 1`-th iteration on, a turn drops the items of the iterations before
  the last `RETAINED_ITERATIONS` (`WorkflowStream.truncate`).

What a subscriber that starts late (`turnkeeper watch`, `TurnHandle.events()`, both from offset
0) can read after that: every event of the last `RETAINED_ITERATIONS` iterations and the turn's
end, so the console's screen (its last 40 lines, about 8 iterations), the state it folds from
the events (iteration, cost against budget, counters, pending approvals: all published within
the current iteration) and the turn's ending are what they were; the older iterations' lines
are not (their whole record stays in history, the `transcript` query and the report). A
subscriber that falls more than `RETAINED_ITERATIONS` iterations behind resumes at the oldest
event kept (the stream client restarts from the base offset on a truncated offset), without an
error and without seeing an event twice.

Truncating changes what poll updates answer and what continue-as-new carries, so it runs
behind `workflow.patched(PATCH)`: a turn started before it keeps its whole stream on replay.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.api.common.v1 import Payload, Payloads

with workflow.unsafe.imports_passed_through():
    from temporalio.contrib.workflow_streams import WorkflowStream, WorkflowTopicHandle
    from turnkeeper.contracts.events import TurnEvent

PATCH = "stream-retention"
RETAINED_ITERATIONS = 20
# The stream's own query for its current global offset (base offset + items kept), one of the
# handlers `WorkflowStream` registers; reading it costs nothing, unlike `get_state()`.
_OFFSET_QUERY = "__temporal_workflow_stream_offset"


class RetainedEvents:
    """Publishes a turn's events to its stream, keeping the last iterations' only."""

    def __init__(self, stream: WorkflowStream, topic: WorkflowTopicHandle[TurnEvent]) -> None:
        self._stream = stream
        self._topic = topic
        self._arena = Payloads()
        # Global offset at which each retained iteration's `iteration_started` was published.
        self._iteration_starts: list[int] = []

    def publish(self, event: TurnEvent) -> None:
        if event.kind == "iteration_started":
            self._arena = Payloads()  # the dropped iterations' arena goes with their items
            self._iteration_starts.append(self._offset())
            self._drop_old_iterations()
        payload: Payload = self._arena.payloads.add()
        payload.CopyFrom(workflow.payload_converter().to_payloads([event])[0])
        self._topic.publish(payload)

    def _drop_old_iterations(self) -> None:
        if len(self._iteration_starts) <= RETAINED_ITERATIONS:
            return
        if not workflow.patched(PATCH):
            self._iteration_starts = self._iteration_starts[-RETAINED_ITERATIONS:]
            return
        keep_from = self._iteration_starts[-RETAINED_ITERATIONS]
        self._iteration_starts = self._iteration_starts[-RETAINED_ITERATIONS:]
        self._stream.truncate(keep_from)

    def _offset(self) -> int:
        offset = workflow.get_query_handler(_OFFSET_QUERY)
        assert offset is not None, "WorkflowStream registers its offset query in __init__"
        return int(offset())
