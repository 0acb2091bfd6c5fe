"""`turnkeeper eval`: start an evaluation run and follow it as its cases end; `eval show` and
`eval compare` read runs back. The dataset and the agent file are checked here, before anything
starts: a dataset that does not load, an invalid model or a `--id` the runtime keeps is refused
with exit code 2 and no run."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowQueryFailedError
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.activities.evals.datasets import DatasetError, load_dataset
from turnkeeper.client import eval_runs
from turnkeeper.client.eval_summary import compare, overall_pass_rate, summaries
from turnkeeper.client.requests import RequestError, read_agent_definition
from turnkeeper.client.turns import short_id, suffixed_turn_id
from turnkeeper.console.commands import Connection, _connect
from turnkeeper.console.eval_reports import case_label, failure_text, write_reports
from turnkeeper.console.terminal import CommandError, err, out
from turnkeeper.contracts.evals import (
    EVAL_RUN_WORKFLOW_TYPE,
    INVALID_EVAL_RUN,
    QUERY_EVAL_PROGRESS,
    ApprovalMode,
    CaseResult,
    EvalProgress,
    EvalRunInput,
)
from turnkeeper.contracts.search_attributes import EVAL_PROGRESS, TENANT_ID, eval_progress
from turnkeeper.contracts.turn_ids import turn_id_problem
from turnkeeper.workflows.evals.cases import Unit, case_request, total_units

_POLL_S = 0.5


@dataclass(frozen=True)
class EvalOptions:
    """`turnkeeper eval`'s flags."""

    dataset: Path
    agent: Path
    models: list[str]
    repeat: int
    concurrency: int
    max_cost_usd: float | None
    run_id: str | None
    report: Path | None
    fail_under: float | None
    approvals: ApprovalMode
    tenant: str | None
    task_queue: str


def prepare(options: EvalOptions) -> tuple[str, EvalRunInput]:
    """The run's id and input, checked as far as can be without a worker.

    Raises:
        CommandError: (exit 2) the dataset or the agent file does not load, a model is invalid,
            `--id` is not an id a run may have.
    """
    try:
        name, cases = load_dataset(options.dataset)
        agent = read_agent_definition(options.agent)
    except (DatasetError, RequestError) as error:
        raise CommandError(str(error), exit_code=2) from None
    models = options.models or ([agent.agent["model"]] if "model" in agent.agent else [])
    if not models:
        raise CommandError("no model: give --model, or a model in the agent file", exit_code=2)
    run_id = options.run_id or suffixed_turn_id(f"eval-{name}", short_id())
    problem = turn_id_problem(run_id)
    if problem:
        raise CommandError(f"--id: {problem}", exit_code=2)
    request: dict[str, Any] = {"agent": agent.agent, "task": {"constraints": agent.constraints}}
    try:
        run = EvalRunInput(
            dataset=name,
            request=request,
            models=models,
            repeat=options.repeat,
            concurrency=options.concurrency,
            max_cost_usd=options.max_cost_usd,
            approvals=options.approvals,
            tenant=options.tenant,
            cases=cases,
        )
    except ValueError as error:
        raise CommandError(f"invalid evaluation: {error}", exit_code=2) from None
    _check_models(run_id, run)
    return run_id, run


def _check_models(run_id: str, run: EvalRunInput) -> None:
    """A model every case would fail on is refused here; a case whose own request is invalid
    is not: it fails alone, in the run, with its error."""
    for index, model in enumerate(run.models):
        problems = [
            case_request(run_id, run, Unit(case, index, 0), None) for case in range(len(run.cases))
        ]
        if all(isinstance(p, str) and "model" in p for p in problems):
            raise CommandError(f"--model {model}: {problems[0]}", exit_code=2)


async def run_eval(connection: Connection, options: EvalOptions) -> int:
    """Start the run, print each case as it ends, then the summary; the exit code is 1 when
    `--fail-under` is not met."""
    run_id, run = prepare(options)
    client, target = await _connect(connection)
    handle = await start_run(client, run_id, run, options.task_queue)
    err.print(f"evaluation {run_id}: {target.workflow_url(run_id)}", soft_wrap=True)
    progress = await _follow(handle)
    _print_summary(progress)
    if options.report is not None:
        for path in write_reports(options.report, run_id, progress):
            err.print(f"wrote {path}", soft_wrap=True)
    rate = overall_pass_rate(progress)
    if options.fail_under is not None and rate < options.fail_under:
        err.print(f"pass rate {rate:.3f} is under --fail-under {options.fail_under}")
        return 1
    return 0


async def start_run(
    client: Client, run_id: str, run: EvalRunInput, task_queue: str
) -> WorkflowHandle[Any, EvalProgress]:
    """Starts the run `prepare` made (the chaos matrix starts its runs here too).

    Raises:
        CommandError: (exit 2) a run with that id exists.
    """
    # In the Web UI's list from the start: "0/400", then the run counts each case's end.
    pairs = [SearchAttributePair(EVAL_PROGRESS, eval_progress(0, total_units(run)))]
    if run.tenant:
        pairs.append(SearchAttributePair(TENANT_ID, run.tenant))
    try:
        return await client.start_workflow(
            EVAL_RUN_WORKFLOW_TYPE,
            run,
            id=run_id,
            task_queue=task_queue,
            result_type=EvalProgress,
            static_summary=f"eval · {run.dataset} · {len(run.cases)} cases",
            search_attributes=TypedSearchAttributes(pairs),
        )
    except RPCError as error:
        if error.status == RPCStatusCode.ALREADY_EXISTS:
            raise CommandError(f"--id: a run {run_id!r} already exists", exit_code=2) from None
        raise


async def _follow(handle: WorkflowHandle[Any, EvalProgress]) -> EvalProgress:
    """Prints each case run as it ends (under a progress bar on a terminal) until the run ends."""
    printed = 0
    result = asyncio.ensure_future(_result(handle))
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task("cases", total=None)
        while not result.done():
            await asyncio.wait([result], timeout=_POLL_S)
            progress = result.result() if result.done() else await _query(handle, printed)
            if progress is None:
                continue
            for case in progress.results[printed - progress.results_from :]:
                out.print(_line(case), soft_wrap=True)
            printed = progress.results_from + len(progress.results)
            bar.update(task, total=progress.total, completed=printed)
    return result.result()


async def _result(handle: WorkflowHandle[Any, EvalProgress]) -> EvalProgress:
    try:
        return await handle.result()
    except WorkflowFailureError as failure:
        cause = failure.cause
        if isinstance(cause, ApplicationError) and cause.type == INVALID_EVAL_RUN:
            raise CommandError(cause.message, exit_code=2) from None
        raise CommandError(f"the evaluation run failed: {cause or failure}") from None


async def _query(handle: WorkflowHandle[Any, EvalProgress], since: int) -> EvalProgress | None:
    """The results after the first `since` (all of them again at every look cost the run's worker
    more than the cases as the run grew); all of them from a worker that takes no `since`."""
    try:
        return await handle.query(QUERY_EVAL_PROGRESS, since, result_type=EvalProgress)
    except WorkflowQueryFailedError:
        pass  # a worker of a build before `since`: its handler takes no argument
    except RPCError:
        return None  # not started by a worker yet, or between two runs of continue-as-new
    try:
        return await handle.query(QUERY_EVAL_PROGRESS, result_type=EvalProgress)
    except RPCError:
        return None


def _line(result: CaseResult) -> str:
    if result.outcome == "skipped":
        return f"- {case_label(result)}  skipped"
    mark = "✓" if result.passed else "✗"
    scores = " ".join(f"{k}={v.value}" for k, v in result.scores.items())
    why = "" if result.passed else "  " + failure_text(result).replace("\n", "; ")
    return f"{mark} {case_label(result)}  {scores}  ${result.total_cost_usd:.4f}{why}".rstrip()


def _print_summary(progress: EvalProgress) -> None:
    table = Table(title=f"{progress.dataset}: {len(progress.results)}/{progress.total} case runs")
    for column in ("model", "passed", "rate", f"pass@{progress.repeat}", "cost", "p50", "p95"):
        table.add_column(column, no_wrap=column == "model")
    models = summaries(progress)
    for s in models:
        table.add_row(
            s.model,
            f"{s.passed}/{s.cases}" + (f" ({s.skipped} skipped)" if s.skipped else ""),
            f"{s.pass_rate:.2f}",
            f"{s.pass_at_k:.2f}",
            f"${s.cost_usd:.4f}",
            f"{s.p50_duration_ms / 1000:.1f}s",
            f"{s.p95_duration_ms / 1000:.1f}s",
        )
    out.print(table)
    # Mean scores under the table: one line per model, however many scorers the dataset has.
    for s in models:
        means = " ".join(f"{name}={value:.2f}" for name, value in s.scores.items())
        out.print(f"{s.model} mean scores: {means or 'none'}", soft_wrap=True)


async def read_run(client: Client, run_id: str) -> EvalProgress:
    """A run's results: its result when it ended, else what it has so far.

    Raises:
        CommandError: no such run, or no worker answers a running one.
    """
    try:
        progress, _ = await eval_runs.read_run(client, run_id)
    except eval_runs.EvalRunMissing:
        raise CommandError(f"no evaluation run {run_id!r}") from None
    except eval_runs.EvalRunUnreadable:
        raise CommandError(
            f"evaluation run {run_id!r} cannot be read now (is a worker running?)"
        ) from None
    return progress


async def show(connection: Connection, run_id: str, cases: bool, as_json: bool) -> int:
    """Per model: pass rate, pass@k, mean scores, cost, p50/p95; each case run with `cases`."""
    client, _ = await _connect(connection)
    progress = await read_run(client, run_id)
    if as_json:
        summary = [s.model_dump(mode="json") for s in summaries(progress)]
        body = {"run_id": run_id, "summary": summary, **progress.model_dump(mode="json")}
        out.print_json(json.dumps(body))
        return 0
    _print_summary(progress)
    if cases:
        for result in progress.results:
            out.print(_line(result), soft_wrap=True)
    return 0


async def compare_runs(connection: Connection, run_a: str, run_b: str, as_json: bool) -> int:
    """Which cases got better or worse from run A to run B, and the cost and duration change."""
    client, _ = await _connect(connection)
    a, b = await read_run(client, run_a), await read_run(client, run_b)
    changes = compare(a, b)
    if as_json:
        out.print_json(json.dumps([c.model_dump(mode="json") for c in changes]))
        return 0
    better = [c for c in changes if c.pass_rate_b > c.pass_rate_a]
    worse = [c for c in changes if c.pass_rate_b < c.pass_rate_a]
    for title, group in (("better", better), ("worse", worse)):
        out.print(f"{title}: {len(group)}")
        for c in group:
            out.print(f"  {c.case} [{c.model}]  {c.pass_rate_a:.2f} → {c.pass_rate_b:.2f}")
    cost_a, cost_b = sum(c.cost_usd_a for c in changes), sum(c.cost_usd_b for c in changes)
    out.print(f"unchanged: {len(changes) - len(better) - len(worse)}")
    out.print(f"cost: ${cost_a:.4f} → ${cost_b:.4f} ({_change(cost_a, cost_b)})")
    dur_a = sum(c.duration_ms_a for c in changes)
    dur_b = sum(c.duration_ms_b for c in changes)
    out.print(f"mean duration per case: {_change(dur_a, dur_b)}")
    return 0


def _change(before: float, after: float) -> str:
    if before == 0:
        return "n/a" if after == 0 else "new"
    return f"{(after - before) / before:+.0%}"
