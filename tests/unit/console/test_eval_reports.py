"""What an evaluation run adds up to (per model, pass@k, percentiles, a comparison) and the
reports `--report DIR` writes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from turnkeeper.contracts.evals import CaseResult, EvalProgress, Score

from turnkeeper.client.eval_summary import compare, overall_pass_rate, summaries
from turnkeeper.console.eval_reports import write_reports


def result(case: str, repetition: int, passed: bool, duration_ms: int = 100) -> CaseResult:
    return CaseResult(
        case=case,
        model="m",
        repetition=repetition,
        outcome="completed",
        cost_usd=0.01,
        duration_ms=duration_ms,
        scores={"Contains": Score(value=passed), "Similarity": Score(value=0.5)},
    )


def progress(results: list[CaseResult]) -> EvalProgress:
    return EvalProgress(dataset="d", total=len(results), results=results, models=["m"], repeat=2)


def test_pass_rate_counts_case_runs_and_pass_at_k_counts_cases() -> None:
    results = [result("a", 1, False), result("a", 2, True), result("b", 1, False)]
    skipped = CaseResult(case="b", model="m", repetition=2, outcome="skipped", cost_usd=0)
    [summary] = summaries(progress([*results, skipped]))
    assert (summary.cases, summary.passed, summary.skipped) == (3, 1, 1)
    assert summary.pass_rate == 1 / 3 and summary.pass_at_k == 1 / 2
    assert summary.scores == {"Contains": 1 / 3, "Similarity": 0.5}
    assert overall_pass_rate(progress([*results, skipped])) == 1 / 3


def test_durations_are_reported_at_p50_and_p95() -> None:
    results = [result(f"c{n}", 1, True, duration_ms=n * 10) for n in range(1, 101)]
    [summary] = summaries(progress(results))
    assert summary.p50_duration_ms == 505 and summary.p95_duration_ms == 950.5


def test_a_scorer_error_or_a_failed_turn_does_not_pass() -> None:
    errored = result("a", 1, True).model_copy(update={"scorer_errors": {"judge": "boom"}})
    failed = result("b", 1, True).model_copy(update={"outcome": "failed"})
    assert not errored.passed and not failed.passed


def test_compare_pairs_each_case_and_model_of_both_runs() -> None:
    before = progress([result("a", 1, False), result("b", 1, True), result("gone", 1, True)])
    after = progress([result("a", 1, True), result("b", 1, True)])
    changes = {c.case: c for c in compare(before, after)}
    assert set(changes) == {"a", "b"}
    assert (changes["a"].pass_rate_a, changes["a"].pass_rate_b) == (0, 1)


def test_reports_name_the_failing_case_and_why(tmp_path: Path) -> None:
    failing = result("shouts", 1, False)
    written = write_reports(tmp_path / "r", "eval-1", progress([result("a", 1, True), failing]))
    assert [p.name for p in written] == ["report.json", "junit.xml", "index.html"]
    [suite] = ET.parse(tmp_path / "r" / "junit.xml").getroot()
    [failure] = suite.iter("failure")
    assert failure.text == "Contains: failed"
    assert json.loads((tmp_path / "r" / "report.json").read_text())["summary"][0]["passed"] == 1
    page = (tmp_path / "r" / "index.html").read_text()
    assert page.count("<svg") == 1 and "shouts" in page
