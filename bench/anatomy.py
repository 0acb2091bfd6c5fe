"""Which fields of which events hold a history's bytes: the evidence behind a ratio.

Every event is split into its top-level fields (`user_metadata` is the summary shown in the Web
UI, `header` the propagated context, ...) and, inside its attributes, each field of the
attributes message, keyed `EVENT_TYPE.field`. Activity events are keyed by activity type too,
since a model call and a tool call carry different things.
"""

from __future__ import annotations

from collections import Counter

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

_ATTRIBUTES_SUFFIX = "_event_attributes"


def field_bytes(runs: list[list[HistoryEvent]]) -> Counter[str]:
    """Serialized bytes per `EVENT_TYPE[activity].field` over a chain of runs."""
    sizes: Counter[str] = Counter()
    for events in runs:
        activity_of: dict[int, str] = {}
        for event in events:
            kind = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
            label = kind + _activity_label(event, activity_of)
            for descriptor, value in event.ListFields():
                if descriptor.name.endswith(_ATTRIBUTES_SUFFIX):
                    for inner, inner_value in value.ListFields():
                        sizes[f"{label}.{inner.name}"] += _size(inner_value)
                elif descriptor.name not in ("event_id", "event_type", "event_time"):
                    sizes[f"{label}.{descriptor.name}"] += _size(value)
            # id, type and time, plus the protobuf framing of every field
            sizes[f"{label}.(envelope)"] += event.ByteSize() - sum(
                _size(v)
                for d, v in event.ListFields()
                if d.name not in ("event_id", "event_type", "event_time")
            )
    return sizes


def _activity_label(event: HistoryEvent, activity_of: dict[int, str]) -> str:
    kind = event.event_type
    if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        name = event.activity_task_scheduled_event_attributes.activity_type.name
        activity_of[event.event_id] = name
        return f"[{name}]"
    for attributes_name in (
        "activity_task_started_event_attributes",
        "activity_task_completed_event_attributes",
    ):
        if event.HasField(attributes_name):
            scheduled = getattr(event, attributes_name).scheduled_event_id
            return f"[{activity_of.get(scheduled, '?')}]"
    return ""


def _size(value: object) -> int:
    if hasattr(value, "ByteSize"):
        return int(value.ByteSize())  # type: ignore[attr-defined]
    if isinstance(value, (bytes, str)):
        return len(value)
    if isinstance(value, (list, tuple)) or type(value).__name__.startswith("Repeated"):
        return sum(_size(item) for item in value)  # type: ignore[union-attr]
    return 8  # a scalar: at most a varint or a fixed64


def per_iteration_fields(
    low: Counter[str], high: Counter[str], steps: int, top: int = 25
) -> list[tuple[str, float]]:
    """The fields that grow most per iteration, largest first."""
    grown = {key: (high[key] - low[key]) / steps for key in set(low) | set(high)}
    ranked = sorted(grown.items(), key=lambda item: -abs(item[1]))
    return [(key, value) for key, value in ranked[:top] if abs(value) >= 1]


def samples(runs: list[list[HistoryEvent]], model: str, tool: str) -> dict[str, str]:
    """Decoded payloads of the second model call and the first tool call, for reading."""
    found: dict[str, str] = {}
    activity_of: dict[int, str] = {}
    seen: Counter[str] = Counter()
    for event in runs[0] if runs else []:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            name = attributes.activity_type.name
            activity_of[event.event_id] = name
            seen[name] += 1
            if (name, seen[name]) in ((model, 2), (tool, 1)):
                found[f"{name} input"] = _text(attributes.input.payloads)
                found[f"{name} scheduled event (no input)"] = _without_input(event)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attributes = event.activity_task_completed_event_attributes
            name = activity_of.get(attributes.scheduled_event_id, "")
            if f"{name} result" not in found and seen[name] == (2 if name == model else 1):
                found[f"{name} result"] = _text(attributes.result.payloads)
        elif event.event_type == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            found.setdefault(
                "upsert", str(event.upsert_workflow_search_attributes_event_attributes)
            )
    return found


def _text(payloads: object, limit: int = 1500) -> str:
    parts = []
    for payload in payloads:  # type: ignore[attr-defined]
        data = payload.data.decode("utf-8", errors="replace")
        parts.append(data if len(data) <= limit else data[:limit] + f"… ({len(data)} bytes)")
    return "\n".join(parts)


def _without_input(event: HistoryEvent) -> str:
    copy = HistoryEvent()
    copy.CopyFrom(event)
    copy.activity_task_scheduled_event_attributes.ClearField("input")
    return f"{copy.ByteSize()} bytes: {copy}"
