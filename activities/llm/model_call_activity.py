"""The model-call activity: a thin adapter between Temporal and a `ModelProvider`, one named step
after another.

It resolves the conversation from the content store, offers the named tools (worker tools are
looked up here, on the worker, so their definitions never travel through history), checks the
cost budget, makes one provider attempt while heartbeating, stores the answer and returns only
the new assistant message plus references. Failures are mapped to typed `ApplicationError`s;
Temporal's retry policy decides whether to try again. The conversation steps and the answer's
size check live here, at the end; the cost check, the offered tools and the provider attempt,
each with a reason of its own to change, have modules of their own.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.attachments.resolve import AttachmentReader
from turnkeeper.activities.defects import defects_fail_once
from turnkeeper.activities.llm.cost_check import answer_cost, check_cost_budget
from turnkeeper.activities.llm.offered_tools import (
    approval_required,
    tool_definitions,
    tool_traits,
)
from turnkeeper.activities.llm.provider_call import call_provider, provider_for
from turnkeeper.activities.llm.rate_gate import RateGate
from turnkeeper.activities.llm.tenant_caps import tenant_reservation
from turnkeeper.activities.observation.tracing import model_call_span
from turnkeeper.activities.policies.policy_activity import PolicyBook
from turnkeeper.activities.providers.provider import (
    ModelProvider,
    ModelRequest,
    ModelResponse,
    media_types,
)
from turnkeeper.activities.store.conversation_store import Conversation, ConversationStore
from turnkeeper.activities.tools.registry import ToolRegistry
from turnkeeper.activities.turn_identity import bound_to_turn
from turnkeeper.contracts.activity_io import CallContext, ModelCallInput, ModelCallResult
from turnkeeper.contracts.errors import CONTENT_MISSING, LLM_PAYLOAD_REJECTED
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.names import ACTIVITY_MODEL_CALL
from turnkeeper.contracts.policy_io import PolicyCheckResult

from turnkeeper.ground.logs import get_logger
from turnkeeper.payloads.content_store import ContentMissingError

log = get_logger(__name__)

# Temporal's default limit on one payload is 2 MiB; keep a margin for the envelope.
PAYLOAD_LIMIT_BYTES = 2_000_000


class ModelCallActivities:
    def __init__(
        self,
        providers: Mapping[str, ModelProvider],
        conversations: ConversationStore,
        tools: ToolRegistry,
        rate_gate: RateGate | None = None,
        policies: PolicyBook | None = None,
        attachments: AttachmentReader | None = None,
    ) -> None:
        self._providers = providers
        self._attachments = attachments or AttachmentReader(conversations.store)
        self._conversations = conversations
        self._tools = tools
        self._rate_gate = rate_gate or RateGate(None, {})
        # None: answers carry no policy rulings, and the turn asks `check_policy` instead.
        self._policies = policies

    @activity.defn(name=ACTIVITY_MODEL_CALL)
    async def model_call(self, call: ModelCallInput) -> ModelCallResult:
        with defects_fail_once(ACTIVITY_MODEL_CALL):
            return await self._model_call(bound_to_turn(call))

    async def _model_call(self, call: ModelCallInput) -> ModelCallResult:
        started = time.monotonic()
        provider, model_name = provider_for(self._providers, call.model)
        conversation, context = await resolve_conversation(self._conversations, call)
        request = self._request(call, model_name, conversation, context)
        # Only the provider's request holds an attachment's bytes; the stored conversation and
        # the answer keep its reference.
        request.messages = await self._attachments.with_bytes(
            request.messages, media_types(provider), call.model
        )
        with model_call_span(
            call.model, request, iteration=call.iteration, turn_id=call.turn_id
        ) as span:
            span.stands_in_for(call.skipped)
            async with tenant_reservation(call, provider, request) as settlement:
                await check_cost_budget(call, provider, request)
                grant = await self._rate_gate.acquire(call, request)

                async def rate_limited(seconds: float) -> None:
                    await self._rate_gate.back_off(call.model, seconds)

                try:
                    response = await call_provider(provider, request, call, rate_limited)
                except ApplicationError:
                    await self._rate_gate.settle(grant, None)
                    raise
                await self._rate_gate.settle(grant, response.usage)
                if response.rate_limited_s is not None:
                    # The answer says the key's limit is spent: the fleet waits for its reset
                    # instead of each turn's next call getting a 429.
                    await self._rate_gate.back_off(call.model, response.rate_limited_s)
                reported = response.reported_cost_usd
                cost, priced_by = answer_cost(call, response.usage, reported)
                settlement.cost_usd = cost
            span.answered(response, cost)
        assistant, conversation_ref = await store_answer(
            self._conversations, conversation, response
        )
        result = ModelCallResult(
            message=assistant,
            stop_reason=response.stop_reason,
            usage=response.usage,
            cost_usd=cost,
            priced_by=priced_by,
            conversation_ref=conversation_ref,
            duration_ms=int((time.monotonic() - started) * 1000),
            capacity_wait_ms=grant.waited_ms if grant else 0,
            policy_rulings=self._rulings(call, assistant, cost),
            **self._worker_tool_facts(call),
        )
        log_model_call(call, result)
        check_payload_size(result)
        return result

    def _rulings(
        self, call: ModelCallInput, answer: Message, cost: float
    ) -> list[PolicyCheckResult]:
        if self._policies is None:
            return []
        return self._policies.rule_answer(call.policy_caller, answer, cost)

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
        priced_by=result.priced_by,
        duration_ms=result.duration_ms,
        stop_reason=result.stop_reason,
    )


async def resolve_conversation(
    conversations: ConversationStore, call: ModelCallInput
) -> tuple[Conversation, CallContext]:
    """The call's conversation, its new messages stored, and the turn's context (its root, or
    for a chain older than context roots the object `call.context_ref` names).

    Raises:
        ApplicationError: ContentMissing, not retried: the store lost part of the conversation;
            the workflow re-sends it inline.
    """
    try:
        conversation = await conversations.resolve(call.conversation, call.context)
        context = conversation.context or await _legacy_context(conversations, call)
    except ContentMissingError as err:
        raise ApplicationError(str(err), type=CONTENT_MISSING, non_retryable=True) from err
    return conversation, context


async def _legacy_context(conversations: ConversationStore, call: ModelCallInput) -> CallContext:
    if call.context_ref is None:
        return CallContext()
    return await conversations.get_context(call.context_ref)


async def store_answer(
    conversations: ConversationStore, conversation: Conversation, response: ModelResponse
) -> tuple[Message, str]:
    """The provider's answer as the assistant message, appended to the stored conversation (in
    place), and the reference of the conversation that ends with it."""
    assistant = Message(role="assistant", content=response.content)
    return assistant, await conversations.append(conversation, assistant)


def check_payload_size(result: ModelCallResult) -> None:
    """Raises ApplicationError (LLMPayloadRejected, not retried) when `result` serializes to
    more than Temporal's payload limit."""
    # A full serialization only when the answer could come near the limit: JSON escaping at
    # most sextuples a character, so text under a sixth of the limit is always safe.
    rough = sum(
        len(getattr(block, "text", "")) + len(str(getattr(block, "input", "")))
        for block in result.message.content
    )
    if rough * 6 < PAYLOAD_LIMIT_BYTES:
        return
    size = len(result.model_dump_json())
    if size > PAYLOAD_LIMIT_BYTES:
        # Temporal would reject the completion and the call would be retried (and billed) again.
        raise ApplicationError(
            f"the model's answer is {size} bytes, over Temporal's {PAYLOAD_LIMIT_BYTES}-byte "
            f"payload limit; lower agent.max_tokens or ask for a shorter answer",
            type=LLM_PAYLOAD_REJECTED,
            non_retryable=True,
        )
