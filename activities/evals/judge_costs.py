"""What a scorer's own model calls cost: an `LLMJudge` runs a pydantic-ai agent, whose requests
and answers `capture_run_messages` hands back with each answer's token usage. Priced with the
worker's price table, as a turn's model calls are, so that the judge is inside the run's budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from turnkeeper.contracts.pricing import cost_usd, price_for
from turnkeeper.contracts.turn import Usage


@dataclass(frozen=True)
class JudgeCost:
    """The cost of one scorer's model calls; `unpriced` names a model the table has no price
    for (its calls then cost nothing here, and a run with a cost cap refuses the scorer)."""

    usd: float = 0.0
    calls: int = 0
    unpriced: str | None = None


def judge_cost(evaluator: Any, messages: Sequence[Any]) -> JudgeCost:
    """The priced usage of every model answer in `messages` (pydantic-ai's `ModelMessage`s of
    the scorer's agent run; none for a scorer that called no model)."""
    # Imported here: pydantic-ai comes with pydantic-evals, loaded by a worker's first scoring.
    from pydantic_ai.messages import ModelResponse

    answers = [m for m in messages if isinstance(m, ModelResponse)]
    if not answers:
        return JudgeCost()
    named = getattr(evaluator, "model", None)
    total, unpriced = 0.0, None
    for answer in answers:
        model = named if isinstance(named, str) else f"{answer.provider_name}:{answer.model_name}"
        price = price_for(model)
        if price is None:
            unpriced = model
            continue
        total += cost_usd(_usage(answer.usage), price)
    return JudgeCost(usd=total, calls=len(answers), unpriced=unpriced)


def unpriced_judge(evaluator: Any) -> str | None:
    """The model a scorer names (an `LLMJudge`'s `model`) when the price table has no price for
    it, known before any call; a judge of pydantic-evals' default model is priced as it answers."""
    named = getattr(evaluator, "model", None)
    return named if isinstance(named, str) and price_for(named) is None else None


def _usage(usage: Any) -> Usage:
    """pydantic-ai counts cached input inside `input_tokens`; the price table prices it apart."""
    cache_read, cache_write = usage.cache_read_tokens, usage.cache_write_tokens
    return Usage(
        input_tokens=max(0, usage.input_tokens - cache_read - cache_write),
        output_tokens=usage.output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )
