"""Shared by the console-command tests: invoking the typer app in-process, and undoing the
logging configuration each invocation installs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest
import structlog
import temporalio.activity
import temporalio.workflow
from temporalio.client import Client
from typer.testing import CliRunner, Result

from turnkeeper.cli import app

runner = CliRunner()


async def invoke(*arguments: str) -> Result:
    """Run one command. From a thread: the command calls `asyncio.run`, and the test already
    runs inside an event loop (which also keeps the test's worker polling meanwhile)."""
    return await asyncio.to_thread(runner.invoke, app, list(arguments))


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
