"""One model call of a turn: the activity, its fallbacks, and the mapping of its failures to
the contract's error types."""

from __future__ import annotations

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
    from turnkeeper.workflows import budgets
    from turnkeeper.workflows.activity_options import MODEL_CALL_HEARTBEAT, MODEL_CALL_RETRY
    from turnkeeper.workflows.failures import (
        cause_message,
        error_type,
        fail,
        fail_if_internal_error,
        timed_out,
    )
    from turnkeeper.workflows.structured_output import instruction
    from turnkeeper.workflows.turn_state import Turn


async def call_model(turn: Turn, offered: list[str]) -> ModelCallResult:
    """Calls the agent's model, then each fallback model once the one before is exhausted."""
    agent = turn.request.agent
    failures: list[str] = []
    for model in [agent.model, *agent.fallback_models]:
        try:
            return await _call_resending(turn, model, offered)
        except ActivityError as err:
            if is_cancelled_exception(err):
                raise
            _fail_unless_transient(turn, err)
            message = cause_message(err)
            workflow.logger.warning("model %s exhausted: %s", model, message)
            failures.append(f"{model}: {message}")
    fail(
        turn,
        errors.LLM_UNAVAILABLE,
        f"no model answered after retries ({len(failures)} tried): " + "; ".join(failures),
    )


def _fail_unless_transient(turn: Turn, err: ActivityError) -> None:
    """Fails the turn for every failure that another model would not cure."""
    fail_if_internal_error(turn, err)
    kind, message = error_type(err), cause_message(err)
    if kind in errors.LLM_REFUSALS or kind == errors.INVALID_TURN_REQUEST:
        fail(turn, kind, message)
    if kind == errors.LLM_PAYLOAD_REJECTED:
        fail(turn, errors.LLM_INVALID_REQUEST, message)
    if kind == errors.TURN_BUDGET_EXCEEDED:
        budgets.fail_cost_budget(turn, message)
    if timed_out(err) and budgets.time_left_ms(turn) <= 0:
        budgets.fail_time_budget(turn)


async def _call_resending(turn: Turn, model: str, offered: list[str]) -> ModelCallResult:
    try:
        return await _model_activity(turn, model, offered)
    except ActivityError as err:
        if error_type(err) != errors.CONTENT_MISSING:
            raise
        workflow.logger.warning("the content store lost the conversation; resending it")
        turn.resend_everything()
        return await _model_activity(turn, model, offered)


async def _model_activity(turn: Turn, model: str, offered: list[str]) -> ModelCallResult:
    request = turn.request
    context = None
    if turn.conversation_ref is None:
        system = request.agent.system_prompt
        if request.agent.output_schema is not None:
            system = "\n\n".join(p for p in (system, instruction(request.agent.output_schema)) if p)
        context = CallContext(
            system_prompt=system,
            external_tools=request.external_tools,
            mcp_tools=[spec.definition() for spec in turn.mcp_tools.values()],
        )
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
    )
    timeout = budgets.model_timeout(turn)
    result = await workflow.execute_activity(
        ACTIVITY_MODEL_CALL,
        call,
        result_type=ModelCallResult,
        # With a time budget, retries too must end when the budget does.
        schedule_to_close_timeout=timeout if budgets.has_time_budget(turn) else None,
        start_to_close_timeout=timeout,
        heartbeat_timeout=MODEL_CALL_HEARTBEAT,
        retry_policy=MODEL_CALL_RETRY,
        summary=f"model call {turn.iteration} · {split_model(model)[1]}",
    )
    turn.traits_loaded = True
    result.model = result.model or model
    return result
