"""Replaying real histories from the server against this installation's workflow code: the gate
before a deploy (`turnkeeper replay`). A history that no longer replays would fail its turn's
next workflow task on the new workers, so a divergence here means: put the change behind
`workflow.patched(…)` or a new Worker Deployment Version.

Temporal's own `Replayer`, with the worker's workflows, the worker's sandbox and the client's
data converter (so encrypted histories decrypt with `TURNKEEPER_ENCRYPTION_KEYS`).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from temporalio.client import Client, WorkflowHistory
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Replayer

from turnkeeper.worker.wiring import worker_workflows, workflow_runner

# The core's failure arrives as a Rust debug dump: `Failure { message: "…", source: …`.
_CORE_MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class ReplayOutcome:
    """One history's replay.

    Attributes:
        workflow_id: The replayed workflow.
        run_id: Its run (None when it could not be fetched).
        problem: None when it replays; else where and how it diverges, or why it could not be
            fetched, in one line.
    """

    workflow_id: str
    run_id: str | None
    problem: str | None = None

    @property
    def replays(self) -> bool:
        return self.problem is None


async def replay_from_server(
    client: Client,
    *,
    workflow_ids: Sequence[str] = (),
    query: str | None = None,
    limit: int | None = None,
    workflows: Sequence[type] | None = None,
) -> AsyncIterator[ReplayOutcome]:
    """Each history of `workflow_ids` (their latest runs), or of the turns `query` lists (at
    most `limit`), replayed on `workflows` (default: the worker's own)."""
    missing: list[ReplayOutcome] = []
    histories = (
        client.list_workflows(query, limit=limit).map_histories()
        if query is not None
        else _by_id(client, workflow_ids, missing)
    )
    replayer = Replayer(
        workflows=list(workflows or worker_workflows()),
        data_converter=client.data_converter,
        workflow_runner=workflow_runner(),
        runtime=_quiet_runtime(),
    )
    async with replayer.workflow_replay_iterator(histories) as results:
        async for result in results:
            while missing:
                yield missing.pop(0)
            history = result.history
            yield ReplayOutcome(
                history.workflow_id, _run_id(history), _divergence(result.replay_failure)
            )
    for outcome in missing:
        yield outcome


def _quiet_runtime() -> Runtime:
    """A runtime whose core logs errors only: by default the core also prints a warning to
    stdout for every workflow task a divergence fails, in the middle of the command's lines, and
    the divergence is reported on its own line anyway."""
    only_errors = TelemetryFilter(core_level="ERROR", other_level="ERROR")
    return Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(filter=only_errors)))


async def _by_id(
    client: Client, workflow_ids: Sequence[str], missing: list[ReplayOutcome]
) -> AsyncIterator[WorkflowHistory]:
    for workflow_id in workflow_ids:
        try:
            yield await client.get_workflow_handle(workflow_id).fetch_history()
        except RPCError as err:
            problem = (
                "no such workflow"
                if err.status == RPCStatusCode.NOT_FOUND
                else f"history not fetched: {err.message}"
            )
            missing.append(ReplayOutcome(workflow_id, None, problem))


def _run_id(history: WorkflowHistory) -> str | None:
    if not history.events:
        return None
    started = history.events[0].workflow_execution_started_event_attributes
    return started.original_execution_run_id or None


def _divergence(failure: Exception | None) -> str | None:
    """The replay failure on one line: the SDK core's own message, which names the history event
    that no longer matches ("Nondeterminism error: Timer machine does not handle this event:
    HistoryEvent(id: 5, …)"), taken out of the debug dump of the failure that wraps it."""
    if failure is None:
        return None
    text = str(failure)
    core = _CORE_MESSAGE.search(text)
    detail = core.group(1) if core else " ".join(text.split())
    return f"{type(failure).__name__}: {detail or 'replay failed'}"
