"""The model-call activity: a thin adapter between Temporal and a `ModelProvider`, one named step
after another.

It resolves the conversation from the content store, offers the named tools (worker tools are
looked up here, on the worker, so their definitions never travel through history), checks the
cost budget, makes one provider attempt while heartbeating, stores the answer and returns only
the new assistant message plus references. Failures are mapped to typed `ApplicationError`s;
Temporal's retry policy decides whether to try again.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from temporalio import activity
from turnkeeper.activities.defects import defects_fail_once
from turnkeeper.activities.llm.answer_size import check_payload_size
from turnkeeper.activities.llm.conversation_steps import resolve_conversation, store_answer
from turnkeeper.activities.llm.cost_check import answer_cost, check_cost_budget
from turnkeeper.activities.llm.offered_tools import (
    approval_required,
    tool_definitions,
    tool_traits,
)
from turnkeeper.activities.llm.provider import ModelProvider, ModelRequest
from turnkeeper.activities.llm.provider_call import call_provider, provider_for
from turnkeeper.activities.logs import get_logger
from turnkeeper.activities.store.conversation_store import Conversation, ConversationStore
from turnkeeper.activities.tools.registry import ToolRegistry
from turnkeeper.activities.tracing import model_call_span
from turnkeeper.activities.turn_identity import bound_to_turn
from turnkeeper.contracts.activity_io import CallContext, ModelCallInput, ModelCallResult
from turnkeeper.contracts.names import ACTIVITY_MODEL_CALL

log = get_logger(__name__)


class ModelCallActivities:
    def __init__(
        self,
        providers: Mapping[str, ModelProvider],
        conversations: ConversationStore,
        tools: ToolRegistry,
    ) -> None:
        self._providers = providers
        self._conversations = conversations
        self._tools = tools

    @activity.defn(name=ACTIVITY_MODEL_CALL)
    async def model_call(self, call: ModelCallInput) -> ModelCallResult:
        with defects_fail_once(ACTIVITY_MODEL_CALL):
            return await self._model_call(bound_to_turn(call))

    async def _model_call(self, call: ModelCallInput) -> ModelCallResult:
        started = time.monotonic()
        provider, model_name = provider_for(self._providers, call.model)
        conversation, context = await resolve_conversation(self._conversations, call)
        request = self._request(call, model_name, conversation, context)
        with model_call_span(
            call.model, request, iteration=call.iteration, turn_id=call.turn_id
        ) as span:
            span.stands_in_for(call.skipped)
            await check_cost_budget(call, provider, request)
            response = await call_provider(provider, request, call)
            cost = answer_cost(call, response.usage)
            span.answered(response, cost)
        assistant, conversation_ref = await store_answer(
            self._conversations, conversation, response
        )
        result = ModelCallResult(
            message=assistant,
            stop_reason=response.stop_reason,
            usage=response.usage,
            cost_usd=cost,
            conversation_ref=conversation_ref,
            duration_ms=int((time.monotonic() - started) * 1000),
            **self._worker_tool_facts(call),
        )
        log_model_call(call, result)
        check_payload_size(result)
        return result

    def _worker_tool_facts(self, call: ModelCallInput) -> dict[str, Any]:
        """What the workflow keeps of the offered worker tools, sent once per turn: only to the
        call that asks for it (the turn's first that offers tools), not with every answer."""
        if not call.want_tool_traits:
            return {}
        return {
            "approval_required": approval_required(call.offered_tools, self._tools),
            "tool_traits": tool_traits(call.offered_tools, self._tools),
        }

    def _request(
        self,
        call: ModelCallInput,
        model_name: str,
        conversation: Conversation,
        context: CallContext,
    ) -> ModelRequest:
        return ModelRequest(
            model=model_name,
            system=context.system_prompt,
            messages=list(conversation.messages),
            tools=tool_definitions(call.offered_tools, context, self._tools),
            max_tokens=call.max_tokens,
            prompt_cache=call.prompt_cache,
        )


def log_model_call(call: ModelCallInput, result: ModelCallResult) -> None:
    """The turn record's `llm_call` line (README, The turn record): counts, never content."""
    log.info(
        "llm_call",
        turn_id=call.turn_id,
        iteration=call.iteration,
        model=call.model,
        input_tokens=result.usage.input_tokens,
        output_tokens=result.usage.output_tokens,
        cache_read_tokens=result.usage.cache_read_tokens,
        cache_write_tokens=result.usage.cache_write_tokens,
        skipped=call.skipped or None,
        cost_usd=result.cost_usd,
        duration_ms=result.duration_ms,
        stop_reason=result.stop_reason,
    )
