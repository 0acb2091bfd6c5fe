"""pydantic-evals dataset files as `turnkeeper eval` loads them: errors name the file, the line
and the field; the turn-fact scorers judge what the turn did."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic_evals.evaluators import EvaluatorContext
from turnkeeper.activities.evals.datasets import DatasetError, load_dataset
from turnkeeper.activities.evals.turn_facts import FACTS, ToolCalled, ToolNotCalled


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("bad.json", '{"cases": [\n{"name": "a",\n "inputs": 1,\n', "bad.json:4: not JSON"),
        ("bad.yaml", "cases:\n  - name: a\n    inputs: [x\n", "bad.yaml:4: not YAML"),
        (
            "bad.yaml",
            "cases:\n  - name: a\n    inputs: hi\n    metadat: 1\n",
            "bad.yaml:4: field cases.0.metadat",
        ),
        (
            "bad.json",
            '{"cases": [\n  {"name": "a",\n   "inputz": "x"}]}',
            "bad.json:2: field cases.0.inputs: Field required",
        ),
        ("bad.yaml", "cases: []\n", "the dataset has no cases"),
        (
            "bad.yaml",
            "cases:\n  - inputs: x\n    evaluators: [{Contains: {nope: 1}}]\n",
            "Failed to instantiate evaluator 'Contains'",
        ),
    ],
)
def test_a_dataset_that_does_not_load_says_where(
    tmp_path: Path, name: str, text: str, says: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DatasetError) as refused:
        load_dataset(path)
    assert str(refused.value).startswith(str(tmp_path))
    assert says in str(refused.value)


def test_cases_carry_the_datasets_scorers_then_their_own(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(
        "evaluators: [TurnOutcome]\ncases:\n  - inputs: hi\n    evaluators: [{my_scorer: {x: 1}}]\n"
    )
    name, [case] = load_dataset(path)
    assert (name, case.name) == ("d", "case-1")
    assert case.evaluators == ["TurnOutcome", {"my_scorer": {"x": 1}}]


def context(calls: list[dict[str, Any]]) -> EvaluatorContext[Any, Any, Any]:
    return EvaluatorContext(
        name="c",
        inputs="",
        metadata=None,
        expected_output=None,
        output="",
        duration=0.0,
        _span_tree=None,  # type: ignore[arg-type]
        attributes={FACTS: {"tool_calls": calls}},
        metrics={},
    )


def test_tool_matchers_read_the_calls_arguments() -> None:
    calls = [{"tool": "refund", "input": {"order_id": "1042", "amount_usd": 25.0}}]
    judge = context(calls)
    assert asyncio.run(ToolCalled("refund", {"order_id": "1042"}).evaluate_async(judge)) is True
    assert asyncio.run(ToolCalled("refund", {"order_id": "9"}).evaluate_async(judge)) is False
    assert asyncio.run(ToolNotCalled("refund", {"order_id": "9"}).evaluate_async(judge)) is True
    assert asyncio.run(ToolNotCalled("lookup").evaluate_async(judge)) is True
