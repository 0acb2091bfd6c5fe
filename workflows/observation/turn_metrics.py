"""The metrics a turn records from workflow code: turns by outcome, their duration, and how long
tool calls waited for a human decision. `TurnObserver` records them as the turn reports its
steps.

They come from OpenTelemetry's global meter provider, which `turnkeeper.telemetry` installs
wrapped in Temporal's `ReplaySafeMeterProvider`: a recording made while a worker replays history
is dropped, so a turn is counted once however often its history is replayed (the same
first-execution-only rule as `workflow.metric_meter()`). Through OpenTelemetry rather than
`workflow.metric_meter()` because the worker's Runtime has a single metrics sink, Temporal's own
SDK metrics (`TURNKEEPER_TEMPORAL_METRICS`): these belong beside the activities' model-call,
token, cost and tool metrics (`activities/observation/metrics.py`), on every exporter those have,
with the labels the README documents and no more.

Imported through the sandbox's pass-through, so the instruments are made once per process. Labels
are ids and enumerations, never content: metrics leave the codec's protection.
"""

from __future__ import annotations

from opentelemetry import metrics
from turnkeeper.contracts.names import METER_NAME
from turnkeeper.contracts.turn import AgentReport

_meter = metrics.get_meter(METER_NAME)

TURN_COUNTER = _meter.create_counter(
    "turnkeeper.turns", unit="{turn}", description="Finished turns, by outcome"
)
TURN_DURATION_HISTOGRAM = _meter.create_histogram(
    "turnkeeper.turn.duration", unit="s", description="Wall-clock duration of finished turns"
)
APPROVAL_WAIT_HISTOGRAM = _meter.create_histogram(
    "turnkeeper.approval.wait",
    unit="s",
    description="Time a tool call waited for a human decision, by tool and decision",
)


def turn_ended(report: AgentReport, error_type: str | None = None) -> None:
    """One finished turn (the last run of a turn that continued as new)."""
    attributes = {"outcome": report.outcome, "agent_id": report.agent_id}
    if error_type:
        attributes["error_type"] = error_type
    TURN_COUNTER.add(1, attributes)
    TURN_DURATION_HISTOGRAM.record(report.duration_ms / 1000, attributes)


def approval_waited(tool: str, approved: bool, waited_s: float) -> None:
    """How long one call waited for its approval decision (a timeout counts as rejected)."""
    APPROVAL_WAIT_HISTOGRAM.record(waited_s, {"tool": tool, "approved": approved})
