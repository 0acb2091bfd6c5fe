"""The SDK core's own warnings (e.g. TMPRL1103, a payload over the 512 KiB warning limit),
forwarded into Python logging and kept, so that a section can say which turn caused them
instead of letting them scroll past on stdout."""

from __future__ import annotations

import logging

from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)


class CoreWarnings(logging.Handler):
    """Keeps the message of every core log record at WARNING or above."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def since(self, mark: int) -> list[str]:
        return self.messages[mark:]


def install_core_warnings() -> CoreWarnings:
    """Makes a runtime that forwards core logs to a kept handler the default; call it before
    any client connects."""
    collector = CoreWarnings()
    logger = logging.getLogger("bench.sdk_core")
    logger.addHandler(collector)
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    forwarding = LogForwardingConfig(logger=logger, append_target_to_name=False)
    telemetry = TelemetryConfig(
        logging=LoggingConfig(
            filter=TelemetryFilter(core_level="WARN", other_level="ERROR"), forwarding=forwarding
        )
    )
    Runtime.set_default(Runtime(telemetry=telemetry), error_if_already_set=False)
    return collector
