"""Reading evaluation runs back from Temporal: one run's results (its result when it ended, its
`eval_progress` query while it runs) and who started it, and the listing of runs. Shared by
`turnkeeper eval show|compare` and the HTTP API's `/v1/evals`."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel
from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.contracts.evals import EVAL_RUN_WORKFLOW_TYPE, QUERY_EVAL_PROGRESS, EvalProgress
from turnkeeper.contracts.names import SA_STARTED_BY
from turnkeeper.contracts.search_attributes import COST_USD_KEY, STARTED_BY, TENANT_ID


class EvalRunMissing(LookupError):
    """No evaluation run has that id."""


class EvalRunUnreadable(RuntimeError):
    """The run is still going and no worker answered its query."""


class ListedEvalRun(BaseModel):
    """One run of a listing, from its search attributes."""

    run_id: str
    status: str
    """`running`, `completed`, `failed`, `terminated`, … (Temporal's, lower case)."""
    started: datetime
    started_by: str | None = None
    tenant: str | None = None
    cost_usd: float | None = None
    """What it had spent when last upserted (its `CostUsd`)."""


async def read_run(client: Client, run_id: str) -> tuple[EvalProgress, str | None]:
    """The run's results and who started it (its `StartedBy`, None when no one signed in).

    Raises:
        EvalRunMissing: no workflow at `run_id`, or one that is not an evaluation run.
        EvalRunUnreadable: running, and no worker answered its query.
    """
    handle = client.get_workflow_handle(run_id, result_type=EvalProgress)
    try:
        described = await handle.describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise EvalRunMissing(run_id) from None
        raise
    if described.workflow_type != EVAL_RUN_WORKFLOW_TYPE:
        raise EvalRunMissing(run_id)
    started_by = described.typed_search_attributes.get(STARTED_BY)
    if described.status == WorkflowExecutionStatus.COMPLETED:
        return await handle.result(), started_by
    try:
        progress = await handle.query(QUERY_EVAL_PROGRESS, result_type=EvalProgress)
    except RPCError:
        raise EvalRunUnreadable(run_id) from None
    return progress, started_by


async def list_runs(client: Client, started_by: str | None, limit: int) -> list[ListedEvalRun]:
    """The newest `limit` runs (started by `started_by`, when given), newest first."""
    query = f"WorkflowType = '{EVAL_RUN_WORKFLOW_TYPE}'"
    if started_by is not None:
        query += f" AND {SA_STARTED_BY} = '{_quoted(started_by)}'"
    found = [execution async for execution in client.list_workflows(query, limit=limit)]
    listed = [_listed(execution) for execution in found]
    return sorted(listed, key=lambda run: run.started, reverse=True)


def _listed(execution: WorkflowExecution) -> ListedEvalRun:
    attributes = execution.typed_search_attributes
    status = execution.status.name.lower() if execution.status else "unknown"
    return ListedEvalRun(
        run_id=execution.id,
        status=status,
        started=execution.start_time,
        started_by=attributes.get(STARTED_BY),
        tenant=attributes.get(TENANT_ID),
        cost_usd=attributes.get(COST_USD_KEY),
    )


def _quoted(value: str) -> str:
    """`value` inside a visibility query's quotes; no escaping is trusted to keep it a string.

    Raises:
        ValueError: it has a quote, a backslash or an unprintable character.
    """
    if any(char in value for char in "'\"\\") or not value.isprintable():
        raise ValueError(f"{value!r} cannot be used in a visibility query")
    return value
