"""The fallback chain with per-model cooldown (seed 003's FallbackChain), as deterministic
workflow state: `agent.model`, then each of `agent.fallback_models`, across providers.

A model that exhausts its attempts with retryable failures is put on cooldown for
`agent.fallback_cooldown_s`: the turn's later model calls pass it over until then, instead of
paying its retry schedule again on every iteration. With a model after it in the chain, a model
gets `agent.fallback_after_attempts` attempts, not the full schedule, so a dead primary costs
seconds, not a minute per call. The last model that can be tried always gets the full schedule.

Cooldowns are per chain entry (`provider:model`), not per provider: an overloaded model says
little about its sibling (Anthropic's 529 is per model), and a provider that is down for all its
models costs each of them `fallback_after_attempts` once per cooldown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.workflows.activity_options import MODEL_CALL_RETRY
    from turnkeeper.workflows.turn_state import Turn

# `agent.fallback_on` value -> the refusal it lets the chain move past.
REFUSALS = {
    "auth": errors.LLM_AUTH_ERROR,
    "invalid_request": errors.LLM_INVALID_REQUEST,
    "context_too_long": errors.LLM_CONTEXT_TOO_LONG,
    "content_filtered": errors.LLM_CONTENT_FILTERED,
}

# Hears of each model a call passes over, and why.
SkipObserver = Callable[[str, str], None]


@dataclass
class Plan:
    """The models one call may try, in order, and those it passes over, with why."""

    ready: list[str]
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def notes(self) -> list[str]:
        return [f"{model}: {reason}" for model, reason in self.skipped]


def plan(turn: Turn, now: datetime) -> Plan:
    """The chain without the models on cooldown; all of it when every model is cooling down
    (a turn waits for no timer while something may answer)."""
    agent = turn.request.agent
    chain = [agent.model, *agent.fallback_chain()]
    ready = [model for model in chain if turn.fallback.cooling_until(model, now) is None]
    if not ready:
        return Plan(ready=chain)
    skipped = []
    for model in chain:
        until = turn.fallback.cooling_until(model, now)
        if until is not None:
            left = (until - now).total_seconds()
            skipped.append((model, f"cooling down for {left:.0f} s more after failing"))
    return Plan(ready=ready, skipped=skipped)


def retry_policy(attempts: int | None) -> RetryPolicy:
    """The model-call retry policy, cut to `attempts` when a fallback waits behind it."""
    if attempts is None:
        return MODEL_CALL_RETRY
    return dataclasses.replace(MODEL_CALL_RETRY, maximum_attempts=attempts)


def passable_refusal(turn: Turn, error_type: str | None) -> str | None:
    """The `agent.fallback_on` value that lets the chain move past this refusal, if any."""
    for name in turn.request.agent.fallback_on:
        if REFUSALS[name] == error_type:
            return name
    return None


def moved_on(
    turn: Turn,
    model: str,
    message: str,
    attempts: int | None,
    refusal: str | None,
    now: datetime,
) -> str:
    """Puts `model` on cooldown after it failed; the reason, for events and the report."""
    cooldown = turn.request.agent.fallback_cooldown_s
    if cooldown > 0:
        turn.fallback.cool_down(model, now + timedelta(seconds=cooldown))
    workflow.logger.warning(
        "model_skipped", extra={"model": model, "refusal": refusal, "error": message}
    )
    if refusal is not None:
        return f"refused (fallback_on {refusal}): {message}"
    tries = f"{attempts} attempts" if attempts else "its retries"
    return f"failed after {tries}: {message}"
