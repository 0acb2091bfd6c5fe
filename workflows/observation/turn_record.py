"""The turn record: one structured log event per step of a turn, emitted through
`workflow.logger` so that nothing is logged again while a worker replays a history. Together
with the activities' `llm_call` and `tool_call` events they trace a turn end to end, and
`turn_completed` is the one line per turn to grep for, on every exit path. The observer says
what each step's line holds (`emit`); the two endings, which carry the turn's counters, are
written here."""

from __future__ import annotations

from typing import Any, Final

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.turn import AgentReport

# What `logging.Logger.makeRecord` refuses in `extra=`: the attributes every LogRecord has, and
# the two the formatter adds. Written out because workflow code may not build a LogRecord to ask.
RESERVED_LOG_RECORD_KEYS: Final = frozenset(
    {
        "args", "asctime", "created", "exc_info", "exc_text", "filename", "funcName", "levelname",
        "levelno", "lineno", "message", "module", "msecs", "msg", "name", "pathname", "process",
        "processName", "relativeCreated", "stack_info", "taskName", "thread", "threadName",
    }
)  # fmt: skip


def turn_failed(report: AgentReport, error_type: str, message: str) -> None:
    emit("turn_failed", error_type=error_type, error=message, **_counters(report), warning=True)


def turn_completed(report: AgentReport, error_type: str | None = None) -> None:
    fields = _counters(report)
    if error_type is not None:
        fields["error_type"] = error_type
    emit("turn_completed", **fields)


def _counters(report: AgentReport) -> dict[str, Any]:
    return {
        "agent_id": report.agent_id,
        "task_id": report.task_id,
        "duration_ms": report.duration_ms,
        "llm_calls": report.llm_calls,
        "tool_calls": report.tool_calls,
        "cost_usd": report.cost_usd,
        "outcome": report.outcome,
        # Cache hits: input tokens read from (and written to) the provider's prompt cache.
        "cache_read_tokens": report.usage.cache_read_tokens,
        "cache_write_tokens": report.usage.cache_write_tokens,
        "models_used": report.models_used,
    }


def emit(event: str, *, warning: bool = False, **fields: Any) -> None:
    """One line of the record: `event` with `fields`, and the turn's workflow id."""
    # Checked here, at every level: the logging module raises on a reserved key only when it
    # builds the record, that is only where the level lets the line through, so a worker at INFO
    # failed a turn that every test (at WARNING) passed.
    reserved = RESERVED_LOG_RECORD_KEYS.intersection(fields)
    if reserved:
        raise TypeError(f"turn record {event!r} reuses reserved LogRecord keys: {sorted(reserved)}")
    fields["workflow_id"] = workflow.info().workflow_id
    if warning:
        workflow.logger.warning(event, extra=fields)
    else:
        workflow.logger.info(event, extra=fields)
