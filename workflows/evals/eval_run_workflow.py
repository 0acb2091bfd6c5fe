"""`EvalRunWorkflow`: an evaluation run. Every case × model × repetition of a dataset runs as a
child `AgentTurnWorkflow` (`<run id>/…`, see `cases.child_id`), at most `concurrency` at a time,
and is scored in the `score_eval_case` activity as it ends.

Durable as turns are: a child is started once at its id and its report read from history, so a
worker killed mid-run loses no case and runs none twice. The run's own history stays bounded:
after `BATCH` cases it stops starting, lets the running ones end, and continues as new carrying
only the results. The cost cap stops starting cases once the run has spent it; the cases left
are reported `skipped`, and each case's turn has at most what the run had left as its budget.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Final

from temporalio import workflow
from temporalio.common import (
    RetryPolicy,
    SearchAttributePair,
    TypedSearchAttributes,
    VersioningBehavior,
)
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError
    from turnkeeper.contracts.evals import (
        ACTIVITY_CHECK_EVAL_SCORERS,
        ACTIVITY_SCORE_EVAL_CASE,
        EVAL_APPROVER,
        EVAL_RUN_WORKFLOW_TYPE,
        INVALID_EVAL_RUN,
        QUERY_EVAL_PROGRESS,
        CaseResult,
        CheckScorersInput,
        EvalProgress,
        EvalRunInput,
        ScoreCaseInput,
        ScoreCaseResult,
    )
    from turnkeeper.contracts.names import (
        SIGNAL_APPROVE,
        SIGNAL_SUBAGENT_CANCELLED,
        SIGNAL_SUBAGENT_PENDING,
        WORKFLOW_TYPE,
    )
    from turnkeeper.contracts.search_attributes import (
        AGENT_ID,
        STARTED_BY,
        TASK_ID,
        TENANT_ID,
    )
    from turnkeeper.contracts.signals import ApproveInput, SubagentPending
    from turnkeeper.contracts.turn import AgentReport, SubagentCancelled, TurnRequest
    from turnkeeper.workflows.evals.cases import (
        Unit,
        case_request,
        child_id,
        total_units,
        unit_at,
    )
    from turnkeeper.workflows.evals.shown_progress import ShownProgress

# A lean run: it scores each case in a local activity, on the worker that saw the case end, in
# that workflow task (a scheduled activity cost each case an activity task and another workflow
# task), and writes its search attributes at most every `SHOW_EVERY` (`shown_progress`), not once
# per case. Runs started before it replay their scheduled activities and writes.
LEAN_RUN_PATCH: Final = "eval-run-lean"

# Cases a run starts before it continues as new: its history then holds at most this many
# children's starts, ends and scorings (about 12 events each), far under Temporal's limits.
BATCH: Final = 100
_SCORE_TIMEOUT: Final = timedelta(minutes=5)
# The scorers' check (and an old run's scoring) on a worker killed with -9 is retried once its
# heartbeats stop, not after the 5 minutes a judge may take: the chaos matrix's eval rows found
# runs held that long by one kill. A lean run's local scoring needs none: a kill loses the
# workflow task, which runs again when its timeout ends.
_SCORE_HEARTBEAT: Final = timedelta(seconds=20)
_SCORE_RETRY: Final = RetryPolicy(maximum_attempts=3)


@workflow.defn(name=EVAL_RUN_WORKFLOW_TYPE)
class EvalRunWorkflow:
    """Runs an evaluation dataset's cases as turns; returns every case's result."""

    @workflow.init
    def __init__(self, run: EvalRunInput) -> None:
        self._run = run
        self._results: list[CaseResult] = list(run.results)
        self._running: set[str] = set()
        self._decided: set[tuple[str, str]] = set()
        self._sending: set[asyncio.Task[None]] = set()
        self._shown = ShownProgress(lambda: len(self._results), total_units(run), self._spent)
        self._lean = False

    @workflow.run
    async def run(self, run: EvalRunInput) -> EvalProgress:
        self._lean = workflow.patched(LEAN_RUN_PATCH)
        if not run.results:
            await self._check_scorers()
        started = 0
        tasks: list[asyncio.Task[None]] = []
        index = len(self._results)
        while index < total_units(run) and started < BATCH:
            await workflow.wait_condition(lambda: len(self._running) < run.concurrency)
            if self._capped():
                break
            unit = unit_at(run, index)
            self._running.add(child_id(workflow.info().workflow_id, run, unit))
            tasks.append(asyncio.create_task(self._case(unit)))
            index += 1
            started += 1
        await asyncio.gather(*tasks)
        self._shown.flush()
        if len(self._results) < total_units(run) and not self._capped():
            carried = run.model_copy(update={"results": self._results})
            workflow.continue_as_new(carried)
        self._skip_the_rest()
        return self._progress(done=True)

    @workflow.query(name=QUERY_EVAL_PROGRESS)
    def progress(self, since: int = 0) -> EvalProgress:
        """The run so far; with `since`, only the results after the first `since` (a client
        that follows the run asks for the new ones, not all again at every look)."""
        return self._progress(done=False, since=since)

    @workflow.signal(name=SIGNAL_SUBAGENT_PENDING)
    def case_waits(self, note: SubagentPending) -> None:
        """A case's turn has calls waiting for approval: `--approvals` decides them at once
        (`policy` leaves them to the turn's own rules). Notes from turns this run did not start
        are ignored: a signal does not say who sent it."""
        if self._run.approvals == "policy" or note.workflow_id not in self._running:
            return
        for call in note.pending:
            key = (note.workflow_id, call.call_id)
            if call.kind != "approval" or key in self._decided:
                continue
            self._decided.add(key)
            decision = ApproveInput(
                call_id=call.call_id,
                approved=self._run.approvals == "approve",
                reason=f"decided by the evaluation run (--approvals {self._run.approvals})",
                approver=EVAL_APPROVER,
            )
            handle = workflow.get_external_workflow_handle(call.workflow_id or note.workflow_id)
            task = asyncio.create_task(handle.signal(SIGNAL_APPROVE, decision))
            self._sending.add(task)  # held until sent: the loop keeps only weak references
            task.add_done_callback(self._sending.discard)

    @workflow.signal(name=SIGNAL_SUBAGENT_CANCELLED)
    def case_cancelled(self, _note: SubagentCancelled) -> None:
        """A case's turn was cancelled: its failure, read where it ends, says so."""

    async def _check_scorers(self) -> None:
        """Fails the run with `InvalidEvalRun` (the activity's message) when a scorer is
        unknown on the worker: before any case starts, none spends anything."""
        specs = [spec for case in self._run.cases for spec in case.evaluators]
        try:
            await workflow.execute_activity(
                ACTIVITY_CHECK_EVAL_SCORERS,
                CheckScorersInput(evaluators=specs),
                start_to_close_timeout=_SCORE_TIMEOUT,
                heartbeat_timeout=_SCORE_HEARTBEAT,
                retry_policy=_SCORE_RETRY,
            )
        except ActivityError as err:
            cause = err.cause
            message = cause.message if isinstance(cause, ApplicationError) else str(cause or err)
            raise ApplicationError(message, type=INVALID_EVAL_RUN, non_retryable=True) from None

    async def _case(self, unit: Unit) -> None:
        run = self._run
        here = workflow.info().workflow_id
        turn_id = child_id(here, run, unit)
        result = CaseResult(
            case=run.cases[unit.case].name,
            model=run.models[unit.model],
            repetition=unit.repetition + 1,
            outcome="failed",
        )
        try:
            left = None if run.max_cost_usd is None else run.max_cost_usd - self._spent()
            request = case_request(here, run, unit, left)
            if isinstance(request, str):
                result.error = f"invalid turn request: {request}"
                return
            result.workflow_id = turn_id
            report = await self._turn(turn_id, request, result)
            if report is not None:
                await self._score(unit, request, report, result)
        finally:
            self._running.discard(turn_id)
            self._results.append(result)
            # The Web UI's list shows the cases ended of all (also for a run another client
            # started) and the cost: a lean run at most every `SHOW_EVERY`, one before at once.
            self._shown.case_ended(at_once=not self._lean)

    async def _turn(
        self, turn_id: str, request: TurnRequest, result: CaseResult
    ) -> AgentReport | None:
        """Runs the case's turn; its report, or None (with `result` saying why) when it failed."""
        try:
            report = await workflow.execute_child_workflow(
                WORKFLOW_TYPE,
                request,
                id=turn_id,
                result_type=AgentReport,
                static_summary=f"eval case · {result.case} · {result.model}",
                search_attributes=self._case_search_attributes(request),
            )
        except ChildWorkflowError as err:
            cause = err.cause
            if isinstance(cause, ApplicationError):
                result.error = f"{cause.type}: {cause.message}"
                partial = _partial(cause)
                if partial is not None:
                    _book(result, partial)
            else:
                result.error = str(cause or err)
            return None
        _book(result, report)
        return report

    async def _score(
        self, unit: Unit, request: TurnRequest, report: AgentReport, result: CaseResult
    ) -> None:
        scoring = ScoreCaseInput(
            case=self._run.cases[unit.case],
            output=result.output,
            outcome=report.outcome,
            cost_usd=report.cost_usd,
            duration_ms=report.duration_ms,
            iterations=report.iterations,
            structured=request.agent.output_schema is not None
            and report.structured_output is not None,
            approvals=result.approvals,
            conversation_ref=report.conversation_ref,
            capped=self._run.max_cost_usd is not None,
        )
        try:
            if self._lean:
                scored = await workflow.execute_local_activity(
                    ACTIVITY_SCORE_EVAL_CASE,
                    scoring,
                    result_type=ScoreCaseResult,
                    start_to_close_timeout=_SCORE_TIMEOUT,
                    retry_policy=_SCORE_RETRY,
                )
            else:
                scored = await workflow.execute_activity(
                    ACTIVITY_SCORE_EVAL_CASE,
                    scoring,
                    result_type=ScoreCaseResult,
                    start_to_close_timeout=_SCORE_TIMEOUT,
                    heartbeat_timeout=_SCORE_HEARTBEAT,
                    retry_policy=_SCORE_RETRY,
                )
        except ActivityError as err:  # a scoring failure fails this case alone
            result.scorer_errors["scoring"] = str(getattr(err, "cause", None) or err)
            return
        result.scores, result.scorer_errors = scored.scores, scored.scorer_errors
        result.judge_cost_usd = scored.judge_cost_usd

    def _case_search_attributes(self, request: TurnRequest) -> TypedSearchAttributes:
        """The case's turn is found like any turn (agent, task, tenant) and belongs to whoever
        started the run (its `StartedBy`, read from the run's start)."""
        pairs: list[SearchAttributePair[str]] = [
            SearchAttributePair(AGENT_ID, request.agent.id),
            SearchAttributePair(TASK_ID, request.task.id),
        ]
        if request.tenant is not None:
            pairs.append(SearchAttributePair(TENANT_ID, request.tenant))
        started_by = workflow.info().typed_search_attributes.get(STARTED_BY)
        if started_by is not None:
            pairs.append(SearchAttributePair(STARTED_BY, started_by))
        return TypedSearchAttributes(pairs)

    def _spent(self) -> float:
        return sum(result.total_cost_usd for result in self._results)

    def _capped(self) -> bool:
        cap = self._run.max_cost_usd
        return cap is not None and self._spent() >= cap

    def _skip_the_rest(self) -> None:
        run = self._run
        for index in range(len(self._results), total_units(run)):
            unit = unit_at(run, index)
            self._results.append(
                CaseResult(
                    case=run.cases[unit.case].name,
                    model=run.models[unit.model],
                    repetition=unit.repetition + 1,
                    outcome="skipped",
                    error=f"not started: the run's cost cap (${run.max_cost_usd}) was spent",
                )
            )

    def _progress(self, *, done: bool, since: int = 0) -> EvalProgress:
        run = self._run
        since = min(max(since, 0), len(self._results))
        return EvalProgress(
            dataset=run.dataset,
            total=total_units(run),
            running=len(self._running),
            results=self._results[since:],
            results_from=since,
            spent_usd=self._spent(),
            max_cost_usd=run.max_cost_usd,
            approvals=run.approvals,
            models=run.models,
            repeat=run.repeat,
            done=done,
        )


def _book(result: CaseResult, report: AgentReport) -> None:
    result.outcome = report.outcome
    result.output = (
        report.structured_output if report.structured_output is not None else report.output
    )
    result.cost_usd = report.cost_usd
    result.duration_ms = report.duration_ms
    result.iterations = report.iterations
    result.approvals = [
        {"tool": d.tool, "approved": d.approved, "approver": d.approver} for d in report.decisions
    ]


def _partial(cause: ApplicationError) -> AgentReport | None:
    try:
        return AgentReport.model_validate(cause.details[0]) if cause.details else None
    except (ValidationError, IndexError, TypeError):
        return None


# A versioned worker keeps a run on the build that started it: its history must replay on the
# code that wrote it; it moves to the current build when it continues as new.
@workflow.defn(name=EVAL_RUN_WORKFLOW_TYPE, versioning_behavior=VersioningBehavior.PINNED)
class PinnedEvalRunWorkflow(EvalRunWorkflow):
    """`EvalRunWorkflow` as a versioned worker runs it: pinned to its build."""

    # The SDK wants the run method (and so the init beside it) declared on the registered class.
    @workflow.init
    def __init__(self, run: EvalRunInput) -> None:
        super().__init__(run)

    @workflow.run
    async def run(self, run: EvalRunInput) -> EvalProgress:
        return await super().run(run)
