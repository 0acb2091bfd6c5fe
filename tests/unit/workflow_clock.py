"""`workflow.now()`, `workflow.logger` and `workflow.wait_condition` for deterministic workflow
state tested without a workflow: the SDK's versions need a running workflow's event loop, and
the state's code is the same code a workflow runs. Tests that need them set them; the rest never
touch them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from temporalio import workflow

# The logger a workflow's `workflow.logger` writes through, so that caplog sees the records.
WORKFLOW_LOGGER = "temporalio.workflow"


class WorkflowClock:
    """The workflow's time, moved on by the test, and what a human does while it waits."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, now: datetime) -> None:
        self.now = now
        self._meanwhile: tuple[float, Callable[[], object]] | None = None
        monkeypatch.setattr(workflow, "now", lambda: self.now)
        monkeypatch.setattr(workflow, "logger", logging.getLogger(WORKFLOW_LOGGER))
        monkeypatch.setattr(workflow, "wait_condition", self._wait_condition)

    def advance(self, *, ms: int = 0, s: float = 0) -> datetime:
        self.now += timedelta(milliseconds=ms, seconds=s)
        return self.now

    def meanwhile(self, after_s: float, action: Callable[[], object]) -> None:
        """`action` (an update a human sends) happens `after_s` into the workflow's next wait."""
        self._meanwhile = (after_s, action)

    # The SDK's signature, timeout included.
    async def _wait_condition(
        self,
        done: Callable[[], bool],
        *,
        timeout: float | None = None,  # noqa: ASYNC109
        **_: object,
    ) -> None:
        """As the SDK's: returns once `done()`, raises TimeoutError when `timeout` passes first."""
        started = self.now
        if not done() and self._meanwhile is not None:
            after_s, action = self._meanwhile
            if timeout is None or after_s < timeout:
                self._meanwhile = None
                self.advance(s=after_s)
                action()
        if done():
            return
        if timeout is None:
            raise AssertionError("the workflow would wait forever: nothing it waits for happens")
        self.now = started + timedelta(seconds=timeout)
        raise TimeoutError
