"""What an evaluation run's results add up to, per model: pass rate, pass@k, mean score per
scorer, cost, p50/p95 duration; and how two runs differ case by case. Pure functions over
`EvalProgress`, shared by `turnkeeper eval`, its reports and the HTTP API."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel

from turnkeeper.contracts.evals import CaseResult, EvalProgress


class ModelSummary(BaseModel):
    """One model's results in a run."""

    model: str
    cases: int
    """Case runs that ended (skipped ones excluded)."""
    passed: int
    pass_rate: float
    """`passed / cases` (0 when none ran)."""
    pass_at_k: float
    """Share of cases with at least one passing repetition (k = `--repeat`)."""
    skipped: int
    scores: dict[str, float]
    """Mean per scorer: a pass/fail scorer's share of passes, a numeric scorer's mean."""
    cost_usd: float
    p50_duration_ms: float
    p95_duration_ms: float


class CaseChange(BaseModel):
    """One case on one model, in run A and in run B."""

    case: str
    model: str
    pass_rate_a: float
    pass_rate_b: float
    cost_usd_a: float
    cost_usd_b: float
    duration_ms_a: float
    duration_ms_b: float


def summaries(progress: EvalProgress) -> list[ModelSummary]:
    """One summary per model, in the run's order of models."""
    by_model: dict[str, list[CaseResult]] = defaultdict(list)
    for result in progress.results:
        by_model[result.model].append(result)
    return [_summary(model, by_model.get(model, [])) for model in progress.models]


def overall_pass_rate(progress: EvalProgress) -> float:
    """Passed case runs over every case run that ended, all models together."""
    ran = [r for r in progress.results if r.outcome != "skipped"]
    return sum(r.passed for r in ran) / len(ran) if ran else 0.0


def _summary(model: str, results: list[CaseResult]) -> ModelSummary:
    ran = [r for r in results if r.outcome != "skipped"]
    passed = sum(r.passed for r in ran)
    by_case: dict[str, list[CaseResult]] = defaultdict(list)
    for result in ran:
        by_case[result.case].append(result)
    durations = sorted(r.duration_ms for r in ran)
    return ModelSummary(
        model=model,
        cases=len(ran),
        passed=passed,
        pass_rate=passed / len(ran) if ran else 0.0,
        pass_at_k=(
            sum(any(r.passed for r in runs) for runs in by_case.values()) / len(by_case)
            if by_case
            else 0.0
        ),
        skipped=len(results) - len(ran),
        scores=_mean_scores(ran),
        cost_usd=sum(r.total_cost_usd for r in results),
        p50_duration_ms=_percentile(durations, 50),
        p95_duration_ms=_percentile(durations, 95),
    )


def _mean_scores(results: Iterable[CaseResult]) -> dict[str, float]:
    values: dict[str, list[float]] = defaultdict(list)
    for result in results:
        for name, score in result.scores.items():
            if isinstance(score.value, bool | int | float):
                values[name].append(float(score.value))
    return {name: statistics.fmean(v) for name, v in sorted(values.items())}


def _percentile(ordered: list[int], percent: int) -> float:
    if not ordered:
        return 0.0
    if len(ordered) == 1:
        return float(ordered[0])
    return statistics.quantiles(ordered, n=100, method="inclusive")[percent - 1]


def compare(a: EvalProgress, b: EvalProgress) -> list[CaseChange]:
    """Each case × model both runs ran, with its pass rate, cost and mean duration in each."""
    runs_a, runs_b = _by_case(a), _by_case(b)
    return [
        CaseChange(
            case=case,
            model=model,
            pass_rate_a=_rate(runs_a[case, model]),
            pass_rate_b=_rate(runs_b[case, model]),
            cost_usd_a=sum(r.total_cost_usd for r in runs_a[case, model]),
            cost_usd_b=sum(r.total_cost_usd for r in runs_b[case, model]),
            duration_ms_a=statistics.fmean(r.duration_ms for r in runs_a[case, model]),
            duration_ms_b=statistics.fmean(r.duration_ms for r in runs_b[case, model]),
        )
        for case, model in runs_a
        if (case, model) in runs_b
    ]


def _by_case(progress: EvalProgress) -> dict[tuple[str, str], list[CaseResult]]:
    runs: dict[tuple[str, str], list[CaseResult]] = defaultdict(list)
    for result in progress.results:
        if result.outcome != "skipped":
            runs[result.case, result.model].append(result)
    return dict(runs)


def _rate(results: list[CaseResult]) -> float:
    return sum(r.passed for r in results) / len(results)
