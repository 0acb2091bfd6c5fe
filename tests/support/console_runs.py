"""Shared by the console-command tests: invoking the typer app in-process, undoing the
logging configuration each invocation installs, and knowing when a running command has shown
something."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
import temporalio.activity
import temporalio.workflow
from temporalio.client import Client
from typer.testing import CliRunner, Result

from turnkeeper.console import render
from turnkeeper.console.cli import app

runner = CliRunner()


async def invoke(*arguments: str) -> Result:
    """Run one command. From a thread: the command calls `asyncio.run`, and the test already
    runs inside an event loop (which also keeps the test's worker polling meanwhile)."""
    return await asyncio.to_thread(runner.invoke, app, list(arguments))


def shown_by_command(monkeypatch: pytest.MonkeyPatch, renderer: str) -> threading.Event:
    """Set once a running command has called `render.<renderer>` (which still prints as
    before): a test that acts after the command saw something waits for this fact instead of
    sleeping past the command's polls and hoping."""
    shown = threading.Event()
    original = getattr(render, renderer)

    def showing(*args: Any, **kwargs: Any) -> Any:
        printed = original(*args, **kwargs)
        shown.set()
        return printed

    monkeypatch.setattr(render, renderer, showing)
    return shown


async def until_shown(
    shown: threading.Event, running: asyncio.Task[Result], within_s: float = 30
) -> None:
    """Waits for `shown`; fails with the command's output if it ends without showing it, and
    fails (instead of hanging) if it shows nothing for `within_s`."""
    for _ in range(int(within_s / 0.1)):
        if await asyncio.to_thread(shown.wait, 0.1):
            return
        if running.done():
            raise AssertionError(f"the command ended first:\n{running.result().output}")
    raise AssertionError(f"the running command showed nothing in {within_s} s")


def address_of(client: Client) -> list[str]:
    return ["--address", client.service_client.config.target_host]


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Every command reconfigures logging for the whole process; later tests must not inherit
    its WARNING threshold or its handler."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    config = structlog.get_config()
    workflow_info = temporalio.workflow.logger.workflow_info_on_message
    activity_info = temporalio.activity.logger.activity_info_on_message
    yield
    root.handlers = handlers
    root.setLevel(level)
    structlog.configure(**config)
    temporalio.workflow.logger.workflow_info_on_message = workflow_info
    temporalio.activity.logger.activity_info_on_message = activity_info
