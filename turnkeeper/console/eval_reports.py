"""`turnkeeper eval --report DIR`: the run's results as `report.json` (everything), `junit.xml`
(one test case per case run, so CI shows the failing ones) and `index.html` (a static page: a
chart per model, and every case run). Written with the standard library: no template engine for
one page."""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from turnkeeper.client.eval_summary import ModelSummary, summaries
from turnkeeper.contracts.evals import CaseResult, EvalProgress

_BAR_WIDTH = 320


def write_reports(directory: Path, run_id: str, progress: EvalProgress) -> list[Path]:
    """Writes the three files into `directory` (made if missing); returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    models = summaries(progress)
    written = {
        "report.json": _json(run_id, progress, models),
        "junit.xml": _junit(run_id, progress),
        "index.html": _html(run_id, progress, models),
    }
    for name, text in written.items():
        (directory / name).write_text(text, encoding="utf-8")
    return [directory / name for name in written]


def _json(run_id: str, progress: EvalProgress, models: list[ModelSummary]) -> str:
    report = {
        "run_id": run_id,
        "summary": [m.model_dump(mode="json") for m in models],
        **progress.model_dump(mode="json"),
    }
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


def case_label(result: CaseResult) -> str:
    """`case [model] #repetition`: how reports name one case run."""
    return f"{result.case} [{result.model}] #{result.repetition}"


def failure_text(result: CaseResult) -> str:
    """Why a case run did not pass: its error, its scorers' errors, the scorers it failed."""
    lines = [result.error] if result.error else []
    lines += [f"{name}: {error}" for name, error in result.scorer_errors.items()]
    lines += [
        f"{name}: failed" + (f" ({score.reason})" if score.reason else "")
        for name, score in result.scores.items()
        if isinstance(score.value, bool) and not score.value
    ]
    return "\n".join(lines) or f"outcome {result.outcome}"


def _junit(run_id: str, progress: EvalProgress) -> str:
    suites = ET.Element("testsuites", name=run_id)
    for model in progress.models:
        results = [r for r in progress.results if r.model == model]
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=f"{progress.dataset} [{model}]",
            tests=str(len(results)),
            failures=str(sum(not r.passed and r.outcome != "skipped" for r in results)),
            skipped=str(sum(r.outcome == "skipped" for r in results)),
            time=f"{sum(r.duration_ms for r in results) / 1000:.3f}",
        )
        for result in results:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{progress.dataset}.{model}",
                name=f"{result.case} #{result.repetition}",
                time=f"{result.duration_ms / 1000:.3f}",
            )
            if result.outcome == "skipped":
                ET.SubElement(case, "skipped", message=result.error or "skipped")
            elif not result.passed:
                failure = ET.SubElement(case, "failure", message=f"outcome {result.outcome}")
                failure.text = failure_text(result)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode")


def _html(run_id: str, progress: EvalProgress, models: list[ModelSummary]) -> str:
    charts = "\n".join(_chart(m) for m in models)
    rows = "\n".join(_row(r) for r in progress.results)
    title = html.escape(f"{progress.dataset} · {run_id}")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; color: #222; }}
table {{ border-collapse: collapse; }}
td, th {{ padding: .25rem .6rem; border-bottom: 1px solid #ddd; }}
.pass {{ color: #1a7f37; }} .fail {{ color: #cf222e; }} .skip {{ color: #888; }}
section {{ margin-bottom: 1.5rem; }}
</style></head><body>
<h1>{title}</h1>
<p>{len(progress.results)} of {progress.total} case runs · spent ${progress.spent_usd:.4f}
· approvals: {html.escape(progress.approvals)}</p>
{charts}
<h2>Case runs</h2>
<table><tr><th>case</th><th>model</th><th>#</th><th>result</th><th>scores</th><th>cost</th>
<th>duration</th></tr>
{rows}
</table></body></html>
"""


def _chart(summary: ModelSummary) -> str:
    """One model's bars: its pass rate, pass@k, then each scorer's mean (numbers over 1 are
    drawn full, and printed)."""
    bars = [("pass rate", summary.pass_rate), ("pass@k", summary.pass_at_k)]
    bars += list(summary.scores.items())
    svg_rows = []
    for n, (label, value) in enumerate(bars):
        y = n * 24
        width = max(0.0, min(value, 1.0)) * _BAR_WIDTH
        svg_rows.append(
            f'<text x="0" y="{y + 16}" font-size="13">{html.escape(label)}</text>'
            f'<rect x="160" y="{y + 4}" width="{width:.1f}" height="16" fill="#4c8eda"/>'
            f'<text x="{170 + _BAR_WIDTH}" y="{y + 16}" font-size="13">{value:.2f}</text>'
        )
    height = len(bars) * 24 + 8
    return (
        f"<section><h2>{html.escape(summary.model)}</h2>"
        f"<p>{summary.passed}/{summary.cases} passed · ${summary.cost_usd:.4f} · "
        f"p50 {summary.p50_duration_ms:.0f} ms · p95 {summary.p95_duration_ms:.0f} ms</p>"
        f'<svg width="{_BAR_WIDTH + 220}" height="{height}" role="img">'
        f"{''.join(svg_rows)}</svg></section>"
    )


def _row(result: CaseResult) -> str:
    if result.outcome == "skipped":
        verdict = '<span class="skip">skipped</span>'
    elif result.passed:
        verdict = '<span class="pass">pass</span>'
    else:
        verdict = f'<span class="fail" title="{html.escape(failure_text(result))}">fail</span>'
    scores = ", ".join(
        f"{html.escape(k)}={html.escape(str(v.value))}" for k, v in result.scores.items()
    )
    return (
        f"<tr><td>{html.escape(result.case)}</td><td>{html.escape(result.model)}</td>"
        f"<td>{result.repetition}</td><td>{verdict}</td><td>{scores}</td>"
        f"<td>${result.total_cost_usd:.4f}</td><td>{result.duration_ms} ms</td></tr>"
    )
