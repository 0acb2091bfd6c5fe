"""An LLM judge's cost: each answer's usage priced by the worker's table, cached input apart."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.usage import RequestUsage
from pydantic_evals.evaluators import Contains, LLMJudge
from turnkeeper.activities.evals.judge_costs import JudgeCost, judge_cost, unpriced_judge


def answer(model: str = "claude-haiku-4-5", **usage: int) -> ModelResponse:
    return ModelResponse(
        parts=[TextPart("ok")],
        usage=RequestUsage(**usage),
        model_name=model,
        provider_name="anthropic",
    )


ASKED = ModelRequest(parts=[UserPromptPart("grade it")])


def test_a_scorer_that_called_no_model_costs_nothing() -> None:
    assert judge_cost(Contains(value="x"), []) == JudgeCost()
    assert judge_cost(LLMJudge(rubric="r"), [ASKED]) == JudgeCost()


def test_each_answer_is_priced_by_the_judges_named_model() -> None:
    judge = LLMJudge(rubric="r", model="anthropic:claude-haiku-4-5")  # $1 in, $5 out per M
    spent = judge_cost(
        judge, [ASKED, answer(input_tokens=1000, output_tokens=100), answer(output_tokens=200)]
    )
    assert spent.calls == 2 and spent.unpriced is None
    assert spent.usd == pytest.approx((1000 * 1 + 300 * 5) / 1e6)


def test_cached_input_is_priced_as_cache_not_twice() -> None:
    # pydantic-ai counts cache reads and writes inside input_tokens.
    usage = {"input_tokens": 1000, "cache_read_tokens": 600, "cache_write_tokens": 100}
    spent = judge_cost(LLMJudge(rubric="r", model="anthropic:claude-haiku-4-5"), [answer(**usage)])
    assert spent.usd == pytest.approx((300 * 1 + 600 * 0.1 + 100 * 1.25) / 1e6)


def test_the_default_judge_is_priced_by_the_model_that_answered() -> None:
    spent = judge_cost(LLMJudge(rubric="r"), [answer("claude-haiku-4-5", output_tokens=1000)])
    assert spent.usd == pytest.approx(5 / 1000)
    unknown = judge_cost(LLMJudge(rubric="r"), [answer("a-local-model", output_tokens=1000)])
    assert (unknown.usd, unknown.unpriced) == (0.0, "anthropic:a-local-model")


def test_an_unpriced_named_model_is_known_before_any_call() -> None:
    assert unpriced_judge(LLMJudge(rubric="r", model="anthropic:claude-nobody-knows")) == (
        "anthropic:claude-nobody-knows"
    )
    assert unpriced_judge(LLMJudge(rubric="r", model="anthropic:claude-haiku-4-5")) is None
    assert unpriced_judge(LLMJudge(rubric="r")) is None  # priced as it answers
    assert unpriced_judge(Contains(value="x")) is None
