"""The model-call activity as a turn runs it: through the fallback chain (the one loop that
walks it, for the turn's own calls and a compaction summary alike), within what is left of the
time budget, and rooted at the turn's system prompt and tools."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import NoReturn

from temporalio import workflow
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.activity_io import CallContext, ModelCallInput, ModelCallResult
    from turnkeeper.contracts.names import ACTIVITY_MODEL_CALL
    from turnkeeper.workflows.activity_calls import PROPAGATE, execute
    from turnkeeper.workflows.activity_options import MODEL_CALL_HEARTBEAT
    from turnkeeper.workflows.answer.structured_output import instruction
    from turnkeeper.workflows.budgets import checks as budgets
    from turnkeeper.workflows.failures import cause_message, error_type, fail
    from turnkeeper.workflows.fleet import fairness as tenant_fairness
    from turnkeeper.workflows.llm import fallback
    from turnkeeper.workflows.subagents.tools import subagent_tools
    from turnkeeper.workflows.tools import a2a as a2a_tools
    from turnkeeper.workflows.tools import skills
    from turnkeeper.workflows.turn_state import Turn
    from turnkeeper.workflows.waits.tool import wait_tools

# One model's call: (model, attempts before falling back or None for the full schedule, the
# models passed over so far with why) -> its result.
Attempt = Callable[[str, int | None, list[str]], Awaitable[ModelCallResult]]
# Raises for a failure that the next model would not cure; given whether the model was the last.
Stop = Callable[[ActivityError, bool], None]


async def on_chain(
    turn: Turn, attempt: Attempt, stop: Stop, on_skip: fallback.SkipObserver
) -> ModelCallResult:
    """Calls the agent's model, then each fallback model once the one before is exhausted
    (seed 003, `workflows/llm/fallback.py`): models on cooldown are passed over, a failing model
    cools down and the next one is tried, and `on_skip` hears of each model passed over.
    `stop` sees every failure of a model that no `fallback_on` lets the chain move past, and
    the last model's; when it returns, the chain moves on, and after the last model the turn
    fails as an outage."""
    plan = fallback.plan(turn, workflow.now())
    for model, reason in plan.skipped:
        on_skip(model, reason)
    cooling = plan.notes()
    failures: list[str] = []
    for index, model in enumerate(plan.ready):
        last = index == len(plan.ready) - 1
        attempts = None if last else turn.request.agent.fallback_after_attempts
        try:
            result = await attempt(model, attempts, plan.notes())
        except ActivityError as err:
            if is_cancelled_exception(err):
                raise
            passed = fallback.passable_refusal(turn, error_type(err))
            if passed is None or last:
                stop(err, last)
            message = cause_message(err)
            reason = fallback.moved_on(turn, model, message, attempts, passed, workflow.now())
            plan.skipped.append((model, reason))
            failures.append(f"{model}: {message}")
            if not last:
                on_skip(model, reason)
            continue
        turn.fallback.answered(model)
        result.model = result.model or model
        return result
    _fail_unavailable(turn, failures, cooling)


def _fail_unavailable(turn: Turn, failures: list[str], cooling: list[str]) -> NoReturn:
    """Every model of the chain was tried (or is cooling down): the turn fails as an outage."""
    passed_over = f"; passed over: {'; '.join(cooling)}" if cooling else ""
    fail(
        turn,
        errors.LLM_UNAVAILABLE,
        f"no model answered after retries ({len(failures)} tried): "
        + "; ".join(failures)
        + passed_over,
    )


async def execute_model_call(
    turn: Turn, call: ModelCallInput, summary: str, attempts: int | None = None
) -> ModelCallResult:
    """Runs the model-call activity within what is left of the turn's time budget; `attempts`
    cuts its retry schedule short (a model with a fallback after it)."""
    timeout = budgets.model_timeout(turn)
    return await execute(
        ACTIVITY_MODEL_CALL,
        call,
        # The fallback chain (`on_chain`) reads every failure: it moves on or stops the turn.
        PROPAGATE,
        result_type=ModelCallResult,
        options=workflow.ActivityConfig(
            # With a time budget, retries too must end when the budget does.
            schedule_to_close_timeout=timeout if budgets.has_time_budget(turn) else None,
            start_to_close_timeout=timeout,
            heartbeat_timeout=MODEL_CALL_HEARTBEAT,
            retry_policy=fallback.retry_policy(attempts),
            summary=summary,
            priority=tenant_fairness.priority(turn.request),
        ),
    )


def call_context(turn: Turn) -> CallContext:
    """What a new stored conversation of the turn is rooted at: system prompt and tools."""
    request = turn.request
    system = skills.system_prompt(turn, request.agent.system_prompt)
    if request.agent.output_schema is not None:
        system = "\n\n".join(p for p in (system, instruction(request.agent.output_schema)) if p)
    return CallContext(
        system_prompt=system,
        # Sub-agents reach the model as tools defined in the request, as external tools do.
        external_tools=[
            *request.external_tools,
            *subagent_tools(request),
            *a2a_tools.tool_specs(turn),
            *wait_tools(request),
        ],
        mcp_tools=[spec.definition() for spec in turn.tools.mcp_tools.values()],
    )
