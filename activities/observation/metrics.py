"""The activities' OpenTelemetry metrics: model calls, tokens, cost, tool calls.

Instruments come from the global meter provider through OpenTelemetry's proxy, so they exist at
import time and start recording once `turnkeeper.worker.telemetry.configure_telemetry` installs a
provider; until then (and with `OTEL_METRICS_EXPORTER=none`) every call is a no-op.

Call these from activities and the worker only: a turn's own metrics (turns by outcome, approval
waits) are recorded in workflow code, replay-safe, by `workflows/observation/turn_metrics.py`.
"""

from __future__ import annotations

from opentelemetry import metrics
from turnkeeper.contracts.names import METER_NAME
from turnkeeper.contracts.turn import Usage

_meter = metrics.get_meter(METER_NAME)

MODEL_CALL_COUNTER = _meter.create_counter(
    "turnkeeper.model_calls",
    unit="{call}",
    description="Model-call attempts, by model and outcome (ok or the error type)",
)
MODEL_CALL_DURATION_HISTOGRAM = _meter.create_histogram(
    "turnkeeper.model_call.duration", unit="s", description="Duration of model-call attempts"
)
TOKEN_COUNTER = _meter.create_counter(
    "turnkeeper.tokens",
    unit="{token}",
    description="Tokens billed, by model and token_type (input, output, cache_read, cache_write)",
)
COST_COUNTER = _meter.create_counter(
    "turnkeeper.cost", unit="USD", description="Cost of model calls in US dollars, by model"
)
TOOL_CALL_COUNTER = _meter.create_counter(
    "turnkeeper.tool_calls", unit="{call}", description="Worker tool calls, by tool and outcome"
)
TOOL_CALL_DURATION_HISTOGRAM = _meter.create_histogram(
    "turnkeeper.tool_call.duration", unit="s", description="Duration of worker tool calls"
)


def record_model_call(model: str, outcome: str, duration_s: float) -> None:
    """One model-call attempt; `outcome` is "ok" or the failure's error type."""
    attributes = {"model": model, "outcome": outcome}
    MODEL_CALL_COUNTER.add(1, attributes)
    MODEL_CALL_DURATION_HISTOGRAM.record(duration_s, attributes)


def record_usage(model: str, usage: Usage, cost_usd: float) -> None:
    """Tokens and cost of one answered model call. `input` counts uncached input tokens, as the
    provider bills them; cache reads and writes are their own token types."""
    by_type = {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "cache_read": usage.cache_read_tokens,
        "cache_write": usage.cache_write_tokens,
    }
    for token_type, count in by_type.items():
        if count:
            TOKEN_COUNTER.add(count, {"model": model, "token_type": token_type})
    if cost_usd:
        COST_COUNTER.add(cost_usd, {"model": model})


def record_tool_call(tool: str, outcome: str, duration_s: float) -> None:
    """One worker tool call; `outcome` is "ok", "error" or "cancelled"."""
    attributes = {"tool": tool, "outcome": outcome}
    TOOL_CALL_COUNTER.add(1, attributes)
    TOOL_CALL_DURATION_HISTOGRAM.record(duration_s, attributes)
