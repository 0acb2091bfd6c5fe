"""Turn outcomes and approval waits as metrics, derived from the turn record's log events.

Workflow code does no I/O, and a metric recorded there would be recorded again on every replay.
The turn record (`workflows/turn_record.py`) already emits `turn_completed` on every exit path
of a turn and `approval_decided` for every decision, through `workflow.logger`, which stays
silent while a worker replays history. A logging handler on that logger therefore sees each event
once and turns it into a metric, outside workflow code and without adding anything to history
(a local activity would add a marker event per turn and change every recorded history).
"""

from __future__ import annotations

import logging
from typing import Any

from temporalio import workflow

from turnkeeper.activities import metrics

TURN_COMPLETED = "turn_completed"
APPROVAL_DECIDED = "approval_decided"


class TurnMetricsHandler(logging.Handler):
    """Records `turnkeeper.turns` and `turnkeeper.approval.wait` from turn-record events."""

    def __init__(self) -> None:
        super().__init__(level=logging.INFO)
        # Levels changed by install, put back by uninstall.
        self.previous_levels: list[tuple[logging.Logger | logging.Handler, int]] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _record(_event_name(record), record.__dict__)
        except Exception:
            # A metric is never worth failing a workflow task for.
            self.handleError(record)


def install_turn_metrics() -> TurnMetricsHandler:
    """Attach the handler to the workflow logger; `uninstall_turn_metrics` removes it."""
    logger = workflow.logger.base_logger
    handler = TurnMetricsHandler()
    logger.addHandler(handler)
    _keep_info_records(logger, handler)
    return handler


def uninstall_turn_metrics(handler: TurnMetricsHandler) -> None:
    workflow.logger.base_logger.removeHandler(handler)
    for owner, level in reversed(handler.previous_levels):
        owner.setLevel(level)
    handler.previous_levels.clear()


def _keep_info_records(logger: logging.Logger, handler: TurnMetricsHandler) -> None:
    """The turn record logs at INFO. With a quieter `--log-level`, let INFO records reach our
    handler anyway, and move the threshold onto the root handlers so stderr stays as quiet.
    (A `configure_logging` after this replaces those handlers and loses the threshold.)"""
    if logger.getEffectiveLevel() <= logging.INFO:
        return
    root = logging.getLogger()
    for root_handler in root.handlers:
        if root_handler.level == logging.NOTSET:
            handler.previous_levels.append((root_handler, root_handler.level))
            root_handler.setLevel(root.getEffectiveLevel())
    handler.previous_levels.append((logger, logger.level))
    logger.setLevel(logging.INFO)


def _event_name(record: logging.LogRecord) -> str:
    # With `workflow_info_on_message` on, the SDK appends " ({...workflow info...})".
    return str(record.msg).partition(" ")[0]


def _record(event: str, fields: dict[str, Any]) -> None:
    if event == TURN_COMPLETED and "outcome" in fields:
        duration_ms = fields.get("duration_ms")
        metrics.record_turn(
            str(fields["outcome"]),
            agent_id=str(fields.get("agent_id", "")),
            error_type=fields.get("error_type"),
            duration_s=duration_ms / 1000 if isinstance(duration_ms, int | float) else None,
        )
    elif event == APPROVAL_DECIDED and isinstance(fields.get("waited_s"), int | float):
        metrics.record_approval_wait(
            str(fields.get("tool", "")), bool(fields.get("approved")), float(fields["waited_s"])
        )
