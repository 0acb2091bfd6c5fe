"""The library logger (turnkeeper/ground/logs.py): `logging` lines until the application
configures structlog, and no structlog (nor `rich`, which structlog's import loads) for a user who
only connects and starts turns."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator

import pytest
import structlog

from turnkeeper.ground.logs import get_logger


def test_a_library_user_loads_neither_structlog_nor_rich() -> None:
    script = (
        "import sys\n"
        "from turnkeeper import connect, start_turn\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'structlog', 'rich'}))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "[]", loaded.stdout


@pytest.fixture
def unconfigured() -> Iterator[None]:
    """structlog as an application that never configured it has it; then as it was (a test
    before may have configured it as the worker does)."""
    configured, config = structlog.is_configured(), structlog.get_config()
    structlog.reset_defaults()
    try:
        yield
    finally:
        if configured:
            structlog.configure(**config)


@pytest.mark.usefixtures("unconfigured")
def test_unconfigured_it_writes_one_logging_line_per_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = get_logger("turnkeeper.test_logs")
    with caplog.at_level(logging.INFO, logger="turnkeeper.test_logs"):
        log.debug("not shown")
        log.info("started", name="reserved by logging", count=2)
        try:
            raise ZeroDivisionError("no")
        except ZeroDivisionError:
            log.exception("failed", step="divide")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, "started name='reserved by logging' count=2"),
        (logging.ERROR, "failed step='divide'"),
    ]
    assert caplog.records[1].exc_info is not None


@pytest.mark.usefixtures("unconfigured")
def test_a_method_no_logger_has_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        get_logger("turnkeeper.test_logs").infoo("typo")
