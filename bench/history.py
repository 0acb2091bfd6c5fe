"""History accounting: how many bytes a turn writes to Temporal, and which events they are in.

A turn's bytes are Σ `event.ByteSize()` over every event of every run of its workflow id (a long
turn continues as new, so the chain of runs is followed). Activity inputs and results are split
by activity type into the model call's and the tool call's; everything else is "other".

`floor_history(client, k)` and `turnkeeper_history(client, k, data_dir)` run one turn on a worker
of their own and return its `HistoryStats`; a test can compare the two directly.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from bench.floor import FLOOR_MODEL_ACTIVITY, FLOOR_TOOL_ACTIVITY, floor_worker, start_floor_turn
from bench.turnkeeper_side import (
    MODEL_ACTIVITY,
    TOOL_ACTIVITY,
    check_report,
    start_turnkeeper_turn,
    turnkeeper_worker,
)

KIB = 1024


@dataclass
class HistoryStats:
    k: int
    runs: int = 0
    events: int = 0
    total_bytes: int = 0
    largest_run_bytes: int = 0
    largest_run_events: int = 0
    model_input_bytes: list[int] = field(default_factory=list)  # one per model call, in order
    model_result_bytes: int = 0
    tool_input_bytes: int = 0
    tool_result_bytes: int = 0
    workflow_input_bytes: int = 0
    workflow_result_bytes: int = 0
    largest_payload_bytes: int = 0  # the SDK warns above 512 KiB and refuses above 2 MiB
    sdk_warnings: list[str] = field(default_factory=list)
    events_by_type: dict[str, int] = field(default_factory=dict)
    bytes_by_type: dict[str, int] = field(default_factory=dict)

    @property
    def other_bytes(self) -> int:
        """Everything but model-call inputs and tool results."""
        return self.total_bytes - sum(self.model_input_bytes) - self.tool_result_bytes

    @property
    def model_input_max(self) -> int:
        return max(self.model_input_bytes, default=0)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["model_calls"] = len(self.model_input_bytes)
        data["model_input_bytes_sum"] = sum(self.model_input_bytes)
        data["model_input_bytes_first"] = self.model_input_bytes[0] if self.model_input_bytes else 0
        data["model_input_bytes_last"] = self.model_input_bytes[-1] if self.model_input_bytes else 0
        data["model_input_bytes_max"] = self.model_input_max
        data["other_bytes"] = self.other_bytes
        del data["model_input_bytes"]
        return data


def _payload_bytes(payloads: Iterable[Any]) -> int:
    return sum(payload.ByteSize() for payload in payloads)


def _note(stats: HistoryStats, size: int) -> int:
    stats.largest_payload_bytes = max(stats.largest_payload_bytes, size)
    return size


def account(runs: list[list[HistoryEvent]], k: int, model: str, tool: str) -> HistoryStats:
    """Sums the events of a chain of runs; `model` and `tool` are the activity type names."""
    stats = HistoryStats(k=k, runs=len(runs))
    events_by_type: Counter[str] = Counter()
    bytes_by_type: Counter[str] = Counter()
    for events in runs:
        run_bytes = sum(event.ByteSize() for event in events)
        stats.largest_run_bytes = max(stats.largest_run_bytes, run_bytes)
        stats.largest_run_events = max(stats.largest_run_events, len(events))
        stats.total_bytes += run_bytes
        stats.events += len(events)
        scheduled: dict[int, str] = {}
        for event in events:
            kind = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
            events_by_type[kind] += 1
            bytes_by_type[kind] += event.ByteSize()
            _split(event, scheduled, stats, model, tool)
    stats.events_by_type = dict(events_by_type.most_common())
    stats.bytes_by_type = dict(bytes_by_type.most_common())
    return stats


def _split(
    event: HistoryEvent, scheduled: dict[int, str], stats: HistoryStats, model: str, tool: str
) -> None:
    kind = event.event_type
    if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        attributes = event.activity_task_scheduled_event_attributes
        name = attributes.activity_type.name
        scheduled[event.event_id] = name
        size = _note(stats, _payload_bytes(attributes.input.payloads))
        if name == model:
            stats.model_input_bytes.append(size)
        elif name == tool:
            stats.tool_input_bytes += size
    elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
        attributes = event.activity_task_completed_event_attributes
        name = scheduled.get(attributes.scheduled_event_id, "")
        size = _note(stats, _payload_bytes(attributes.result.payloads))
        if name == model:
            stats.model_result_bytes += size
        elif name == tool:
            stats.tool_result_bytes += size
    elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        attributes = event.workflow_execution_started_event_attributes
        stats.workflow_input_bytes += _note(stats, _payload_bytes(attributes.input.payloads))
    elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
        attributes = event.workflow_execution_completed_event_attributes
        stats.workflow_result_bytes += _note(stats, _payload_bytes(attributes.result.payloads))


async def fetch_chain(
    client: Client, workflow_id: str, first_run_id: str
) -> list[list[HistoryEvent]]:
    """The events of every run of a workflow id, from `first_run_id` through continue-as-new."""
    runs: list[list[HistoryEvent]] = []
    run_id: str | None = first_run_id
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        events = list(history.events)
        runs.append(events)
        last = events[-1] if events else None
        run_id = None
        if last is not None and last.event_type == (
            EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
        ):
            run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    return runs


async def floor_history(client: Client, k: int, task_queue: str | None = None) -> HistoryStats:
    """Runs one floor turn (L = 0) and accounts its history. Without `task_queue` it brings up
    a floor worker of its own for the turn."""
    if task_queue is None:
        queue = f"bench-floor-{uuid.uuid4().hex[:8]}"
        async with floor_worker(client, queue):
            return await floor_history(client, k, queue)
    handle = await start_floor_turn(client, task_queue, k, 0)
    await handle.result()
    runs = await fetch_chain(client, handle.id, handle.first_execution_run_id or "")
    return account(runs, k, FLOOR_MODEL_ACTIVITY, FLOOR_TOOL_ACTIVITY)


async def turnkeeper_history(
    client: Client, k: int, data_dir: Path, task_queue: str | None = None
) -> HistoryStats:
    """Runs one turnkeeper turn (L = 0) and accounts its history. `client` must use
    `bench_data_converter(data_dir)`; without `task_queue` a worker of our own runs for the
    turn, its content store under `data_dir`."""
    if task_queue is None:
        queue = f"bench-turnkeeper-{uuid.uuid4().hex[:8]}"
        async with turnkeeper_worker(client, queue, data_dir):
            return await turnkeeper_history(client, k, data_dir, queue)
    handle = await start_turnkeeper_turn(client, task_queue, k, 0)
    check_report(await handle.result(), k)
    runs = await fetch_chain(client, handle.id, handle.first_execution_run_id or "")
    return account(runs, k, MODEL_ACTIVITY, TOOL_ACTIVITY)


def increment_ratio(points: list[HistoryStats], ks: tuple[int, int, int] = (10, 30, 50)) -> float:
    """Δbytes(k2→k3)/Δbytes(k1→k2), scaled to equal K steps: 1.0 when growth is linear."""
    by_k = {stats.k: stats.total_bytes for stats in points}
    k1, k2, k3 = ks
    first = (by_k[k2] - by_k[k1]) / (k2 - k1)
    second = (by_k[k3] - by_k[k2]) / (k3 - k2)
    return second / first


def per_iteration(low: HistoryStats, high: HistoryStats) -> dict[str, dict[str, float]]:
    """Events and bytes one more iteration adds, by event type (from two turns' difference)."""
    steps = high.k - low.k
    kinds = sorted(set(low.events_by_type) | set(high.events_by_type))
    table = {}
    for kind in kinds:
        events = high.events_by_type.get(kind, 0) - low.events_by_type.get(kind, 0)
        size = high.bytes_by_type.get(kind, 0) - low.bytes_by_type.get(kind, 0)
        if events or size:
            table[kind] = {"events": events / steps, "bytes": size / steps}
    return table
