"""JSON-lines logging for the worker and the console command.

structlog and the standard library (temporalio logs through it, including `workflow.logger` and
`activity.logger`) share one handler, so every line on stderr is one JSON object with the same
keys whichever library wrote it.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

import temporalio.activity
import temporalio.workflow

from turnkeeper.payloads.keyring import UnreadableContentError
from turnkeeper.worker.plain_structlog import structlog

if TYPE_CHECKING:
    from structlog.typing import Processor

# Applied to structlog events and to stdlib records alike, before rendering.
_SHARED_PROCESSORS: list[Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]

# Model SDKs whose DEBUG lines carry each request's options, prompts and tool output included
# (anthropic's "Request options: {... 'json_data': ...}"). A log carries ids and figures, never
# content (README, Payload encryption), at every level: these stay at INFO even under DEBUG.
_CONTENT_AT_DEBUG: tuple[str, ...] = ("anthropic", "openai")


def configure_logging(level: str | int = "INFO") -> None:
    """Send structlog and stdlib logging to stderr as JSON lines with ISO-8601 UTC timestamps.

    Safe to call more than once (the console command and tests do): the root handler is replaced,
    not added to.

    Args:
        level: Threshold for every logger, as a name ("DEBUG") or a number; the model SDKs'
            loggers never go below INFO, where they would log prompts.
    """
    structlog.configure(
        processors=[
            *_SHARED_PROCESSORS,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Not cached: loggers created at import time must pick up a later reconfiguration.
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_json_formatter())
    handler.addFilter(_one_line_for_missing_keys)
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level.upper() if isinstance(level, str) else level)
    for name in _CONTENT_AT_DEBUG:
        logging.getLogger(name).setLevel(max(root.level, logging.INFO))
    # The workflow and activity context already arrives as JSON fields (`temporal_workflow`,
    # `temporal_activity`); repeating it as a dict repr inside the message only hides the event.
    temporalio.workflow.logger.workflow_info_on_message = False
    temporalio.activity.logger.activity_info_on_message = False


def _one_line_for_missing_keys(record: logging.LogRecord) -> bool:
    """The SDK logs a task that fails on undecryptable content with its traceback; a missing key
    is configuration, not a defect, so the line keeps the error's sentence and drops the stack."""
    error = record.exc_info[1] if record.exc_info else None
    while error is not None and not isinstance(error, UnreadableContentError):
        error = error.__cause__ or error.__context__
    if error is not None:
        record.exc_info = None
        record.exc_text = None
        record.msg = f"{record.getMessage()}: {error}"
        record.args = None
    return True


def _json_formatter() -> structlog.stdlib.ProcessorFormatter:
    return structlog.stdlib.ProcessorFormatter(
        # Records from plain `logging` calls: keep their `extra=` fields (temporalio puts the
        # workflow and activity ids there).
        foreign_pre_chain=[*_SHARED_PROCESSORS, structlog.stdlib.ExtraAdder()],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            # Tracebacks as data, without frame locals: those can hold prompts and API keys.
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            ),
            # str() so paths, UUIDs and datetimes read as values, not reprs.
            structlog.processors.JSONRenderer(default=str),
        ],
    )
