"""`workflow.now()` and `workflow.logger` for deterministic workflow state tested without a
workflow: the SDK's versions need a running workflow's event loop, and the state's code is the
same code a workflow runs. Tests that need the clock set it; the rest never touch it."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import pytest
from temporalio import workflow

# The logger a workflow's `workflow.logger` writes through, so that caplog sees the records.
WORKFLOW_LOGGER = "temporalio.workflow"


class WorkflowClock:
    """The workflow's time: set once, moved on by the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, now: datetime) -> None:
        self.now = now
        monkeypatch.setattr(workflow, "now", lambda: self.now)
        monkeypatch.setattr(workflow, "logger", logging.getLogger(WORKFLOW_LOGGER))

    def advance(self, *, ms: int = 0, s: float = 0) -> datetime:
        self.now += timedelta(milliseconds=ms, seconds=s)
        return self.now
