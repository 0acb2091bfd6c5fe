"""`GET /v1/evals` and `GET /v1/evals/{id}`: evaluation runs (`turnkeeper eval`), owned like
turns. A run is seen by whoever started it (its `StartedBy`) and by the operators; to anyone
else it does not exist (the same 404 as a missing run, so ids do not leak). A run started
without signing in (from the command line, which sets no `StartedBy`) is seen by operators only.
"""

from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import FastAPI, Query
from pydantic import BaseModel
from temporalio.client import Client
from temporalio.service import RPCError

from turnkeeper.client import eval_runs
from turnkeeper.client.eval_runs import ListedEvalRun
from turnkeeper.client.eval_summary import ModelSummary, summaries
from turnkeeper.contracts.evals import EvalProgress
from turnkeeper.http.access import DEFAULT_PAGE, MAX_PAGE
from turnkeeper.http.app import Caller
from turnkeeper.http.errors import ApiError
from turnkeeper.http.tokens import Identity


class EvalRunReport(BaseModel):
    """`GET /v1/evals/{id}`: the summary per model and every case run so far."""

    run_id: str
    started_by: str | None
    summary: list[ModelSummary]
    progress: EvalProgress


class EvalRuns(Protocol):
    """What the routes read of evaluation runs (a fake in the unit tests)."""

    async def list_runs(self, started_by: str | None, limit: int) -> list[ListedEvalRun]: ...
    async def read(self, run_id: str) -> tuple[EvalProgress, str | None]: ...


class EvalRunService:
    """`EvalRuns` over a Temporal client."""

    def __init__(self, client: Client) -> None:
        self._client = client

    async def list_runs(self, started_by: str | None, limit: int) -> list[ListedEvalRun]:
        try:
            return await eval_runs.list_runs(self._client, started_by, limit)
        except ValueError as err:
            raise ApiError(500, str(err)) from None
        except RPCError as err:
            raise ApiError(502, f"Temporal refused the listing of runs: {err.message}") from None

    async def read(self, run_id: str) -> tuple[EvalProgress, str | None]:
        try:
            return await eval_runs.read_run(self._client, run_id)
        except eval_runs.EvalRunMissing:
            raise no_run(run_id) from None
        except eval_runs.EvalRunUnreadable:
            raise ApiError(
                503, f"evaluation run {run_id!r} is running and no worker answers"
            ) from None


def no_run(run_id: str) -> ApiError:
    """The answer for a run that does not exist, and for one the caller may not see."""
    return ApiError(404, f"no evaluation run {run_id!r}")


def may_see_run(identity: Identity, started_by: str | None) -> bool:
    """Whether the run exists for `identity`: who started it, or an operator."""
    return identity.is_operator or (started_by is not None and started_by == identity.name)


def add_evals(app: FastAPI, runs: EvalRuns) -> None:
    """The two routes, over `runs`; the caller comes from the app's sign-in."""

    @app.get("/v1/evals")
    async def list_evals(
        identity: Caller, limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = DEFAULT_PAGE
    ) -> list[ListedEvalRun]:
        """The evaluation runs the caller may see, newest first."""
        return await runs.list_runs(None if identity.is_operator else identity.name, limit)

    @app.get("/v1/evals/{run_id:path}")
    async def show_eval(run_id: str, identity: Caller) -> EvalRunReport:
        """One run: the summary per model (pass rate, pass@k, mean scores, cost, p50/p95) and
        every case run so far."""
        progress, started_by = await runs.read(run_id)
        if not may_see_run(identity, started_by):
            raise no_run(run_id)
        return EvalRunReport(
            run_id=run_id, started_by=started_by, summary=summaries(progress), progress=progress
        )
