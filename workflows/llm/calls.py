"""The turn's model call, the one way its loop calls the model (`call`): compaction, when the
agent asks for it, is a step inside it; then the call's input, its fallbacks, and the mapping of
its failures to the contract's error types."""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.activity_io import (
        ConversationDelta,
        ModelCallInput,
        ModelCallResult,
    )
    from turnkeeper.contracts.tenants import TENANT_CAP_REACHED
    from turnkeeper.contracts.turn import split_model
    from turnkeeper.workflows.budgets import checks as budgets
    from turnkeeper.workflows.budgets import tenant_caps
    from turnkeeper.workflows.failures import (
        cause_message,
        error_type,
        fail,
        fail_if_internal_error,
        timed_out,
    )
    from turnkeeper.workflows.llm import compaction
    from turnkeeper.workflows.llm.activity import call_context, execute_model_call, on_chain
    from turnkeeper.workflows.llm.context_window import estimate_tokens
    from turnkeeper.workflows.llm.fallback import SkipObserver
    from turnkeeper.workflows.observation.turn_observer import TurnObserver
    from turnkeeper.workflows.policies import checks as policy_checks
    from turnkeeper.workflows.turn_state import Turn

# Failures that fail the turn under their own name: another model would meet them too.
_NAMED_FAILURES = (errors.INVALID_TURN_REQUEST, errors.CASSETTE_MISS, errors.RUNTIME_ID_TAKEN)


class ContextTooLong(Exception):
    """The provider refused the conversation as too long, raised instead of failing the turn
    when compaction can make room and call once more."""


async def call(turn: Turn, offered: list[str], observer: TurnObserver) -> ModelCallResult:
    """The turn's model call, offering the tools `offered`, through the fallback chain. With
    `agent.compaction` it is compacted first when it would exceed the limit, and compacted and
    made once more when the provider finds it too long (`workflows/llm/compaction.py`)."""

    def on_skip(model: str, reason: str) -> None:
        observer.model_skipped(turn, model, reason)

    spec = turn.request.agent.compaction
    if spec is None:
        return await _on_chain(turn, offered, on_skip)
    await compaction.make_room(turn, spec, observer, on_skip)
    sent = estimate_tokens(turn.sent_messages())
    try:
        result = await _on_chain(turn, offered, on_skip, compacting=True)
    except ContextTooLong as too_long:
        await compaction.make_room_after_refusal(turn, spec, observer, str(too_long), on_skip)
        sent = estimate_tokens(turn.sent_messages())
        result = await _on_chain(turn, offered, on_skip)  # a second refusal fails the turn
    usage = result.usage
    counted = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    turn.compaction.measured(counted, sent)
    return result


async def _on_chain(
    turn: Turn, offered: list[str], on_skip: SkipObserver, *, compacting: bool = False
) -> ModelCallResult:
    """The call through the fallback chain; with `compacting`, a provider that finds it too
    long raises ContextTooLong instead of failing the turn."""

    async def attempt(model: str, attempts: int | None, skipped: list[str]) -> ModelCallResult:
        return await _call_resending(turn, model, offered, attempts, skipped)

    def stop(err: ActivityError, last: bool) -> None:
        _fail_unless_transient(turn, err, compacting)

    return await on_chain(turn, attempt, stop, on_skip)


def _fail_unless_transient(turn: Turn, err: ActivityError, compacting: bool = False) -> None:
    """Fails the turn for every failure that another model would not cure."""
    fail_if_internal_error(turn, err)
    kind, message = error_type(err), cause_message(err)
    if compacting and kind == errors.LLM_CONTEXT_TOO_LONG:
        raise ContextTooLong(message)
    if kind in errors.LLM_REFUSALS or kind in _NAMED_FAILURES:
        fail(turn, kind, message)
    if kind == errors.LLM_PAYLOAD_REJECTED:
        fail(turn, errors.LLM_INVALID_REQUEST, message)
    if kind == errors.TURN_BUDGET_EXCEEDED:
        budgets.fail_cost_budget(turn, message)
    if kind == TENANT_CAP_REACHED:
        tenant_caps.cap_reached(turn, message)
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
        price=request.agent.price_of(model),
        context_ref=turn.context_ref,
        context=context,
        offered_tools=offered if budgets.tool_interactions_left(turn) else [],
        conversation=ConversationDelta(base=turn.conversation_ref, append=turn.unsent),
        cost_budget_left_usd=budgets.cost_left(turn),
        want_tool_traits=not turn.tools.traits_loaded,
        stream_text=request.agent.stream,
        prompt_cache=request.agent.prompt_cache,
        skipped=skipped or [],
        tenant=request.tenant,
        policy_caller=policy_checks.caller(turn),
    )
    summary = f"model call {turn.iteration} · {split_model(model)[1]}"
    try:
        result = await execute_model_call(turn, call, summary, attempts)
    finally:
        turn.fleet.call_over()
    turn.fleet.waited(result.capacity_wait_ms)
    # What the worker's tools are (traits, which need approval) comes once per turn, with the
    # first call that offers them: a turn that starts with no tool interactions learns it later.
    if call.offered_tools:
        turn.tools.learned_tool_traits()
    return result
