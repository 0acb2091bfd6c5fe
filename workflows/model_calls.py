"""One model call of a turn: the activity, its fallbacks, and the mapping of its failures to
the contract's error types."""

from __future__ import annotations

from typing import NoReturn

from temporalio import workflow
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.activity_io import (
        CallContext,
        ConversationDelta,
        ModelCallInput,
        ModelCallResult,
    )
    from turnkeeper.contracts.names import ACTIVITY_MODEL_CALL
    from turnkeeper.contracts.turn import split_model
    from turnkeeper.workflows import budgets, fallback
    from turnkeeper.workflows.activity_options import MODEL_CALL_HEARTBEAT
    from turnkeeper.workflows.failures import (
        cause_message,
        error_type,
        fail,
        fail_if_internal_error,
        timed_out,
    )
    from turnkeeper.workflows.structured_output import instruction
    from turnkeeper.workflows.turn_state import Turn


class ContextTooLong(Exception):
    """The provider refused the conversation as too long, raised instead of failing the turn
    for a caller that can compact it and call once more (workflows/compaction.py)."""


async def call_model(
    turn: Turn,
    offered: list[str],
    on_skip: fallback.SkipObserver | None = None,
    *,
    compacting: bool = False,
) -> ModelCallResult:
    """Calls the agent's model, then each fallback model once the one before is exhausted;
    models on cooldown are passed over, and `on_skip` hears of each model passed over."""
    return await _call_chain(turn, offered, on_skip or fallback.ignore_skip, compacting)


async def _call_chain(
    turn: Turn, offered: list[str], on_skip: fallback.SkipObserver, compacting: bool
) -> ModelCallResult:
    """The fallback chain with per-model cooldown (seed 003): see `workflows/fallback.py`."""
    plan = fallback.plan(turn, workflow.now())
    for model, reason in plan.skipped:
        on_skip(model, reason)
    cooling = plan.notes()
    failures: list[str] = []
    for index, model in enumerate(plan.ready):
        last = index == len(plan.ready) - 1
        attempts = None if last else turn.request.agent.fallback_after_attempts
        try:
            result = await _call_resending(turn, model, offered, attempts, plan.notes())
        except ActivityError as err:
            if is_cancelled_exception(err):
                raise
            passed = fallback.passable_refusal(turn, error_type(err))
            if passed is None or last:
                _fail_unless_transient(turn, err, compacting)
            message = cause_message(err)
            reason = fallback.moved_on(turn, model, message, attempts, passed, workflow.now())
            plan.skipped.append((model, reason))
            failures.append(f"{model}: {message}")
            if not last:
                on_skip(model, reason)
            continue
        turn.model_answered(model)
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


def _fail_unless_transient(turn: Turn, err: ActivityError, compacting: bool = False) -> None:
    """Fails the turn for every failure that another model would not cure."""
    fail_if_internal_error(turn, err)
    kind, message = error_type(err), cause_message(err)
    if compacting and kind == errors.LLM_CONTEXT_TOO_LONG:
        raise ContextTooLong(message)
    if kind in errors.LLM_REFUSALS or kind == errors.INVALID_TURN_REQUEST:
        fail(turn, kind, message)
    if kind == errors.LLM_PAYLOAD_REJECTED:
        fail(turn, errors.LLM_INVALID_REQUEST, message)
    if kind == errors.TURN_BUDGET_EXCEEDED:
        budgets.fail_cost_budget(turn, message)
    if timed_out(err) and budgets.time_left_ms(turn) <= 0:
        budgets.fail_time_budget(turn)


async def _call_resending(
    turn: Turn,
    model: str,
    offered: list[str],
    attempts: int | None = None,
    skipped: list[str] | None = None,
) -> ModelCallResult:
    try:
        return await _model_activity(turn, model, offered, attempts, skipped)
    except ActivityError as err:
        if error_type(err) != errors.CONTENT_MISSING:
            raise
        if turn.request.history_ref is not None:
            # The earlier conversation exists only in the store: re-sending this turn's own
            # messages would let the model answer without it.
            fail(
                turn,
                errors.INVALID_TURN_REQUEST,
                "history_ref: the content store no longer has the conversation this turn "
                f"continues ({turn.request.history_ref})",
            )
        workflow.logger.warning("the content store lost the conversation; resending it")
        turn.resend_everything()
        return await _model_activity(turn, model, offered, attempts, skipped)


async def _model_activity(
    turn: Turn,
    model: str,
    offered: list[str],
    attempts: int | None = None,
    skipped: list[str] | None = None,
) -> ModelCallResult:
    request = turn.request
    context = call_context(turn) if turn.conversation_ref is None else None
    call = ModelCallInput(
        iteration=turn.iteration,
        model=model,
        max_tokens=request.agent.max_tokens,
        price=request.agent.price if model == request.agent.model else None,
        context_ref=turn.context_ref,
        context=context,
        offered_tools=offered if budgets.tool_interactions_left(turn) else [],
        conversation=ConversationDelta(base=turn.conversation_ref, append=turn.unsent),
        cost_budget_left_usd=budgets.cost_left(turn),
        want_tool_traits=not turn.traits_loaded,
        stream_text=request.agent.stream,
        prompt_cache=request.agent.prompt_cache,
        skipped=skipped or [],
    )
    summary = f"model call {turn.iteration} · {split_model(model)[1]}"
    result = await execute_model_call(turn, call, summary, attempts)
    # What the worker's tools are (traits, which need approval) comes once per turn, with the
    # first call that offers them: a turn that starts with no tool interactions learns it later.
    if call.offered_tools:
        turn.learned_tool_traits()
    result.model = result.model or model
    return result


async def execute_on_chain(
    turn: Turn,
    call: ModelCallInput,
    summary: str,
    on_skip: fallback.SkipObserver | None = None,
) -> ModelCallResult:
    """A model call of the turn beside its conversation (a compaction summary) through the
    fallback chain, as the turn's own calls go: models on cooldown are passed over, a failing
    model cools down and the next one is tried, each priced as itself. A refusal or a spent
    budget is raised for the caller, as is the last model's failure."""
    agent = turn.request.agent
    plan = fallback.plan(turn, workflow.now())
    for model, reason in plan.skipped:
        (on_skip or fallback.ignore_skip)(model, reason)
    for index, model in enumerate(plan.ready):
        last = index == len(plan.ready) - 1
        attempts = None if last else agent.fallback_after_attempts
        price = agent.price if model == agent.model else None
        attempt = call.model_copy(update={"model": model, "price": price})
        try:
            result = await execute_model_call(
                turn, attempt, f"{summary} · {split_model(model)[1]}", attempts
            )
        except ActivityError as err:
            passed = fallback.passable_refusal(turn, error_type(err))
            if is_cancelled_exception(err) or last or (passed is None and _final(turn, err)):
                raise
            reason = fallback.moved_on(
                turn, model, cause_message(err), attempts, passed, workflow.now()
            )
            (on_skip or fallback.ignore_skip)(model, reason)
            continue
        turn.model_answered(model)
        result.model = result.model or model
        return result
    raise AssertionError("a fallback plan has at least one model")


def _final(turn: Turn, err: ActivityError) -> bool:
    """A failure that another model would not cure."""
    kind = error_type(err)
    if kind in errors.LLM_REFUSALS or kind in _NOT_FOR_ANOTHER_MODEL:
        return True
    return timed_out(err) and budgets.time_left_ms(turn) <= 0


_NOT_FOR_ANOTHER_MODEL = frozenset(
    {errors.INVALID_TURN_REQUEST, errors.LLM_PAYLOAD_REJECTED, errors.TURN_BUDGET_EXCEEDED}
)


def call_context(turn: Turn) -> CallContext:
    """What a new stored conversation of the turn is rooted at: system prompt and tools."""
    request = turn.request
    system = request.agent.system_prompt
    if request.agent.output_schema is not None:
        system = "\n\n".join(p for p in (system, instruction(request.agent.output_schema)) if p)
    return CallContext(
        system_prompt=system,
        external_tools=request.external_tools,
        mcp_tools=[spec.definition() for spec in turn.mcp_tools.values()],
    )


async def execute_model_call(
    turn: Turn, call: ModelCallInput, summary: str, attempts: int | None = None
) -> ModelCallResult:
    """Runs the model-call activity within what is left of the turn's time budget; `attempts`
    cuts its retry schedule short (a model with a fallback after it)."""
    timeout = budgets.model_timeout(turn)
    return await workflow.execute_activity(
        ACTIVITY_MODEL_CALL,
        call,
        result_type=ModelCallResult,
        # With a time budget, retries too must end when the budget does.
        schedule_to_close_timeout=timeout if budgets.has_time_budget(turn) else None,
        start_to_close_timeout=timeout,
        heartbeat_timeout=MODEL_CALL_HEARTBEAT,
        retry_policy=fallback.retry_policy(attempts),
        summary=summary,
    )
