"""The model-call activity: a thin adapter between Temporal and a `ModelProvider`.

It resolves the conversation from the content store, offers the named tools (worker tools are
looked up here, on the worker, so their definitions never travel through history), makes one
provider attempt while heartbeating, stores the answer and returns only the new assistant
message plus references. Failures are mapped to typed `ApplicationError`s; Temporal's retry
policy decides whether to try again.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import structlog
from temporalio import activity
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.defects import defects_fail_once
from turnkeeper.activities.heartbeating import heartbeating
from turnkeeper.activities.llm.provider import ModelCallError, ModelProvider, ModelRequest, TextSink
from turnkeeper.activities.store.content_store import ContentMissingError
from turnkeeper.activities.store.conversation_store import ConversationStore
from turnkeeper.activities.tools.registry import ToolRegistry
from turnkeeper.activities.tracing import model_call_span
from turnkeeper.activities.turn_identity import bound_to_turn
from turnkeeper.contracts.activity_io import (
    CallContext,
    ModelCallInput,
    ModelCallResult,
    ToolTraits,
)
from turnkeeper.contracts.errors import (
    CONTENT_MISSING,
    INVALID_TURN_REQUEST,
    LLM_INVALID_REQUEST,
    LLM_PAYLOAD_REJECTED,
    TURN_BUDGET_EXCEEDED,
)
from turnkeeper.contracts.events import TURN_EVENTS_TOPIC, TurnEvent
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.names import ACTIVITY_MODEL_CALL
from turnkeeper.contracts.pricing import cost_usd, input_cost_usd, price_for
from turnkeeper.contracts.tools import ToolDefinition
from turnkeeper.contracts.turn import split_model

log = structlog.get_logger()

# A beat soon after the call starts: a cancelled turn reaches a slow provider call in seconds.
HEARTBEAT_EVERY_S = 5.0
T = TypeVar("T")
TEXT_BATCH = timedelta(milliseconds=300)
# Temporal's default limit on one payload is 2 MiB; keep a margin for the envelope.
PAYLOAD_LIMIT_BYTES = 2_000_000


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
        provider_name, model_name = split_model(call.model)
        provider = self._providers.get(provider_name)
        if provider is None:
            raise ApplicationError(
                f"this worker has no provider {provider_name!r} for model {call.model!r}",
                type=LLM_INVALID_REQUEST,
                non_retryable=True,
            )
        try:
            conversation = await self._conversations.resolve(call.conversation, call.context)
            context = conversation.context or await self._legacy_context(call)
        except ContentMissingError as err:
            raise ApplicationError(str(err), type=CONTENT_MISSING, non_retryable=True) from err

        request = ModelRequest(
            model=model_name,
            system=context.system_prompt,
            messages=list(conversation.messages),
            tools=self._offered_tools(call.offered_tools, context),
            max_tokens=call.max_tokens,
            prompt_cache=call.prompt_cache,
        )
        with model_call_span(
            call.model, request, iteration=call.iteration, turn_id=call.turn_id
        ) as span:
            span.stands_in_for(call.skipped)
            await self._check_cost_budget(call, provider, request)
            async with _text_deltas(call) as on_text:
                response = await heartbeating(
                    _classified(provider.complete(request, on_text)), every_s=HEARTBEAT_EVERY_S
                )
            price = price_for(call.model, call.price)
            cost = cost_usd(response.usage, price) if price else 0.0
            span.answered(response, cost)
        assistant = Message(role="assistant", content=response.content)
        conversation_ref = await self._conversations.append(conversation, assistant)
        duration_ms = int((time.monotonic() - started) * 1000)
        log.info(
            "llm_call",
            turn_id=call.turn_id,
            iteration=call.iteration,
            model=call.model,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            cache_read_tokens=response.usage.cache_read_tokens,
            cache_write_tokens=response.usage.cache_write_tokens,
            skipped=call.skipped or None,
            cost_usd=cost,
            duration_ms=duration_ms,
            stop_reason=response.stop_reason,
        )
        result = ModelCallResult(
            message=assistant,
            stop_reason=response.stop_reason,
            usage=response.usage,
            cost_usd=cost,
            conversation_ref=conversation_ref,
            duration_ms=duration_ms,
            approval_required=[
                name
                for name in call.offered_tools
                if (tool := self._tools.get(name)) is not None and tool.requires_approval
            ],
            tool_traits=self._traits(call.offered_tools) if call.want_tool_traits else [],
        )
        _check_payload_size(result)
        return result

    async def _check_cost_budget(
        self, call: ModelCallInput, provider: ModelProvider, request: ModelRequest
    ) -> None:
        """Refuses a call whose input alone would cost more than the budget left, so a turn
        overspends by at most one call's output."""
        left = call.cost_budget_left_usd
        price = price_for(call.model, call.price)
        if left is None or price is None:
            return
        tokens = await provider.count_input_tokens(request)
        cost = input_cost_usd(tokens, price)
        if cost > left:
            raise ApplicationError(
                f"model call {call.iteration} was not made: its input alone (~{tokens} tokens, "
                f"${cost:.6f}) would cost more than the ${left:.6f} left of the cost budget",
                type=TURN_BUDGET_EXCEEDED,
                non_retryable=True,
            )

    def _traits(self, names: list[str]) -> list[ToolTraits]:
        traits = []
        for name in names:
            tool = self._tools.get(name)
            if tool is not None:
                traits.append(
                    ToolTraits(
                        name=name,
                        input_schema=tool.input_schema(),
                        requires_approval=tool.requires_approval,
                        idempotent=tool.idempotent,
                        timeout_s=tool.timeout_s,
                        priority=getattr(tool, "priority", 0),
                        local=getattr(tool, "local", False),
                    )
                )
        return traits

    async def _legacy_context(self, call: ModelCallInput) -> CallContext:
        """The context of a turn whose conversation chain has no context root."""
        if call.context_ref is None:
            return CallContext()
        return await self._conversations.get_context(call.context_ref)

    def _offered_tools(self, names: list[str], context: CallContext) -> list[ToolDefinition]:
        external = {tool.name: tool for tool in context.external_tools}
        mcp = {tool.name: tool for tool in context.mcp_tools}
        definitions: list[ToolDefinition] = []
        for name in names:
            if name in mcp:
                definitions.append(mcp[name])
            elif name in external:
                spec = external[name]
                definitions.append(
                    ToolDefinition(
                        name=spec.name, description=spec.description, input_schema=spec.input_schema
                    )
                )
            elif (tool := self._tools.get(name)) is not None:
                definitions.append(tool.definition())
            else:
                known = ", ".join(self._tools.names()) or "none"
                raise ApplicationError(
                    f"agent.tools names {name!r}, which is neither a tool of this worker "
                    f"({known}) nor an external tool of the request",
                    type=INVALID_TURN_REQUEST,
                    non_retryable=True,
                )
        return definitions


@asynccontextmanager
async def _text_deltas(call: ModelCallInput) -> AsyncIterator[TextSink | None]:
    """Publishes the answer's text to the turn's event stream as it arrives, when the turn asked
    for it. Deltas travel as batched signals (a few history events per call), so it is opt-in."""
    if not call.stream_text:
        yield None
        return
    async with WorkflowStreamClient.from_within_activity(batch_interval=TEXT_BATCH) as stream:
        topic = stream.topic(TURN_EVENTS_TOPIC, type=TurnEvent)

        def publish(text: str) -> None:
            topic.publish(
                TurnEvent(
                    kind="text_delta",
                    at=datetime.now(UTC),
                    iteration=call.iteration,
                    model=call.model,
                    text=text,
                )
            )

        yield publish


def _check_payload_size(result: ModelCallResult) -> None:
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


async def _classified(call: Awaitable[T]) -> T:
    try:
        return await call
    except ModelCallError as err:
        delay = timedelta(seconds=err.retry_after_s) if err.retry_after_s else None
        raise ApplicationError(
            str(err), type=err.error_type, non_retryable=not err.retryable, next_retry_delay=delay
        ) from err
