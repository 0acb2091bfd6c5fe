"""The activities of an evaluation run: `check_eval_scorers` (before any case starts: does this
worker have every scorer the dataset names?) and `score_eval_case` (a case's scorers on its
turn's output and facts). Scorers are user code and may do I/O (an LLM judge calls a model):
they run here, never in the workflow."""

from __future__ import annotations

from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.evals.judge_costs import judge_cost, unpriced_judge
from turnkeeper.activities.evals.registered import Evaluators
from turnkeeper.activities.heartbeating import heartbeating
from turnkeeper.activities.store.conversation_store import ConversationStore
from turnkeeper.contracts.evals import (
    ACTIVITY_CHECK_EVAL_SCORERS,
    ACTIVITY_SCORE_EVAL_CASE,
    INVALID_EVAL_RUN,
    CheckScorersInput,
    Score,
    ScoreCaseInput,
    ScoreCaseResult,
)
from turnkeeper.contracts.turn import AgentReport


class EvalActivities:
    """Scoring over one worker's registered scorers and its conversation store."""

    def __init__(self, scorers: Evaluators, conversations: ConversationStore) -> None:
        self._scorers = scorers
        self._conversations = conversations

    @activity.defn(name=ACTIVITY_CHECK_EVAL_SCORERS)
    async def check_eval_scorers(self, check: CheckScorersInput) -> None:
        """Fails the run (non-retryable `InvalidEvalRun`) when a scorer is unknown here."""
        await heartbeating(self._check(check))

    async def _check(self, check: CheckScorersInput) -> None:
        # pydantic-evals is imported by the first evaluation a worker runs, not at its start.
        from turnkeeper.activities.evals.datasets import builtin_names, spec_name

        known = builtin_names() | set(self._scorers.names())
        unknown = sorted({spec_name(spec) for spec in check.evaluators} - known)
        if unknown:
            raise ApplicationError(
                f"unknown scorer(s) {', '.join(map(repr, unknown))}: not a pydantic-evals or "
                f"turnkeeper evaluator, nor an @turnkeeper.evaluator of this worker "
                f"(it has: {', '.join(self._scorers.names()) or 'none'})",
                type=INVALID_EVAL_RUN,
                non_retryable=True,
            )

    @activity.defn(name=ACTIVITY_SCORE_EVAL_CASE)
    async def score_eval_case(self, scoring: ScoreCaseInput) -> ScoreCaseResult:
        """Each scorer of the case on its turn; a scorer that raises is an error of that scorer
        (the case does not pass), not of the run. Heartbeats while it scores when
        scheduled with a heartbeat timeout (an old run's scoring: an LLM judge takes a while),
        so a dead worker's scoring is retried soon; a lean run scores in a local activity."""
        return await heartbeating(self._score(scoring))

    async def _score(self, scoring: ScoreCaseInput) -> ScoreCaseResult:
        from pydantic_ai import capture_run_messages
        from pydantic_evals.evaluators import EvaluatorContext, EvaluatorFailure

        # The runner pydantic-evals' own `Dataset.evaluate` scores with: the same names and
        # values for what a scorer returns (a bool, a dict of them, an EvaluationReason, …).
        from pydantic_evals.evaluators._run_evaluator import run_evaluator
        from pydantic_evals.otel._errors import SpanTreeRecordingError
        from turnkeeper.activities.evals.datasets import as_pydantic_case
        from turnkeeper.activities.evals.turn_facts import FACTS, TURN_FACT_EVALUATORS

        types = [*TURN_FACT_EVALUATORS, *self._scorers.types()]
        case = as_pydantic_case("eval", scoring.case, types)
        context = EvaluatorContext[Any, Any, Any](
            name=case.name,
            inputs=case.inputs,
            metadata=case.metadata,
            expected_output=case.expected_output,
            output=scoring.output,
            duration=scoring.duration_ms / 1000,
            _span_tree=SpanTreeRecordingError("turnkeeper scores a finished turn, without spans"),
            attributes={FACTS: await self._facts(scoring)},
            metrics={},
        )
        result = ScoreCaseResult()
        for evaluator in case.evaluators:
            unpriced = unpriced_judge(evaluator) if scoring.capped else None
            if unpriced is None:
                # An LLM judge's agent run: its answers carry the usage the run is billed for.
                with capture_run_messages() as messages:
                    outcome = await run_evaluator(evaluator, context)
                spent = judge_cost(evaluator, messages)
                result.judge_cost_usd += spent.usd
                unpriced = spent.unpriced if scoring.capped else None
            if unpriced is not None:
                result.scorer_errors[evaluator.get_default_evaluation_name()] = (
                    f"model {unpriced!r} has no price in the worker's table, and this run has a "
                    "cost cap: a judge whose calls cannot be counted is not run free"
                )
                continue
            if isinstance(outcome, EvaluatorFailure):
                result.scorer_errors[outcome.name] = outcome.error_message
                continue
            for one in outcome:
                result.scores[one.name] = Score(value=one.value, reason=one.reason)
        return result

    async def _facts(self, scoring: ScoreCaseInput) -> dict[str, Any]:
        from turnkeeper.activities.evals.turn_facts import turn_facts

        messages = []
        if scoring.conversation_ref is not None:
            messages = (await self._conversations.load(scoring.conversation_ref)).messages
        report = AgentReport(
            agent_id="",
            task_id="",
            outcome=scoring.outcome,
            cost_usd=scoring.cost_usd,
            iterations=scoring.iterations,
            structured_output=scoring.output if scoring.structured else None,
        )
        facts = turn_facts(report, messages, scoring.structured)
        facts["approvals"] = scoring.approvals
        return facts
