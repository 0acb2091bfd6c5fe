"""OpenInference spans (and the matching metrics) for model calls and tool calls.

The spans are opened inside the activities. When the worker runs with Temporal's
`OpenTelemetryPlugin`, the activity headers carry the workflow's span context, so these spans
are children of the turn span (`workflows.observation.turn_tracing`). Without a configured tracer
provider they are OpenTelemetry's no-op spans and cost next to nothing.

Message contents (prompts, answers, tool output) are put on spans only when
`TURNKEEPER_TRACE_CONTENT=1`: traces often leave the trust boundary of the workspace.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from openinference.semconv.trace import (
    MessageAttributes,
    OpenInferenceMimeTypeValues,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolAttributes,
)
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.observation import metrics
from turnkeeper.activities.observation.trace_messages import (
    FlatMessage,
    indexed,
    openinference_messages,
)
from turnkeeper.activities.providers.provider import ModelRequest, ModelResponse
from turnkeeper.contracts.turn import split_model

CONTENT_ENV: Final = "TURNKEEPER_TRACE_CONTENT"
# Tool arguments are always traced (they say what the agent did); a file's content passed to
# write_file should not make a span megabytes long.
MAX_ARGUMENTS_CHARS: Final = 4096
# Custom attributes where OpenInference has no convention.
TURN_ID: Final = "turnkeeper.turn_id"
ITERATION: Final = "turnkeeper.iteration"
OUTCOME: Final = "turnkeeper.outcome"
# The fallback chain's models this call stood in for, each "provider:model: why".
SKIPPED_MODELS: Final = "turnkeeper.skipped_models"

_tracer = trace.get_tracer("turnkeeper.activities")


def trace_content() -> bool:
    """Whether message contents may go on spans (`TURNKEEPER_TRACE_CONTENT=1`)."""
    return os.environ.get(CONTENT_ENV, "").strip().lower() in {"1", "true", "yes"}


class ModelCallSpan:
    """The open span of one model call; call `answered` once the provider has answered."""

    def __init__(self, span: Span, model: str) -> None:
        self.span = span
        self.model = model
        self.outcome = "ok"

    def stands_in_for(self, skipped: list[str]) -> None:
        """Names the fallback-chain models passed over before this one, and why."""
        if skipped:
            self.span.set_attribute(SKIPPED_MODELS, skipped)

    def answered(self, response: ModelResponse, cost_usd: float) -> None:
        """Put the usage, cost and stop reason on the span and record tokens and cost."""
        usage = response.usage
        # OpenInference's prompt count is every input token, cached or not.
        prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        attributes: dict[str, AttributeValue] = {
            SpanAttributes.LLM_RESPONSE_MODEL_NAME: response.model,
            SpanAttributes.LLM_TOKEN_COUNT_PROMPT: prompt,
            SpanAttributes.LLM_TOKEN_COUNT_COMPLETION: usage.output_tokens,
            SpanAttributes.LLM_TOKEN_COUNT_TOTAL: prompt + usage.output_tokens,
            SpanAttributes.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_READ: usage.cache_read_tokens,
            SpanAttributes.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_WRITE: usage.cache_write_tokens,
            SpanAttributes.LLM_COST_TOTAL: cost_usd,
            SpanAttributes.LLM_FINISH_REASON: response.stop_reason,
        }
        if trace_content():
            output = openinference_messages("assistant", response.content)
            attributes.update(indexed(SpanAttributes.LLM_OUTPUT_MESSAGES, output))
        self.span.set_attributes(attributes)
        metrics.record_usage(self.model, usage, cost_usd)


@contextmanager
def model_call_span(
    model: str, request: ModelRequest, *, iteration: int, turn_id: str
) -> Iterator[ModelCallSpan]:
    """A span of kind LLM around one model-call attempt; records `turnkeeper.model_calls` when
    it closes, with outcome "ok" or the error type of the exception that left it.

    Args:
        model: The request's model, `provider:name`.
        request: What is sent to the provider (contents are traced only when allowed).
        iteration: The turn's iteration that makes the call.
        turn_id: The turn's workflow id.
    """
    provider, model_name = split_model(model)
    attributes: dict[str, AttributeValue] = {
        SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.LLM.value,
        SpanAttributes.LLM_MODEL_NAME: model_name,
        SpanAttributes.LLM_PROVIDER: provider,
        SpanAttributes.LLM_SYSTEM: provider,
        SpanAttributes.LLM_INVOCATION_PARAMETERS: json.dumps({"max_tokens": request.max_tokens}),
        TURN_ID: turn_id,
        ITERATION: iteration,
    }
    if trace_content():
        attributes.update(_request_contents(request))
    started = time.monotonic()
    with _tracer.start_as_current_span(
        f"model_call {model_name}", kind=SpanKind.CLIENT, attributes=attributes
    ) as span:
        handle = ModelCallSpan(span, model)
        try:
            yield handle
        except BaseException as err:
            handle.outcome = outcome_of(err)
            raise
        finally:
            span.set_attribute(OUTCOME, handle.outcome)
            metrics.record_model_call(model, handle.outcome, time.monotonic() - started)


class ToolSpan:
    """The open span of one tool call; call `finished` with the tool's result."""

    def __init__(self, span: Span) -> None:
        self.span = span
        self.outcome = "ok"

    def finished(self, *, is_error: bool, output: str) -> None:
        """Mark the call ok or error; the output text goes on the span only when allowed."""
        self.outcome = "error" if is_error else "ok"
        if is_error:
            self.span.set_status(Status(StatusCode.ERROR, "the tool returned an error result"))
        if trace_content():
            self.span.set_attributes(
                {
                    SpanAttributes.OUTPUT_VALUE: output,
                    SpanAttributes.OUTPUT_MIME_TYPE: OpenInferenceMimeTypeValues.TEXT.value,
                }
            )


@contextmanager
def tool_span(
    name: str, arguments: Mapping[str, Any], *, call_id: str | None = None
) -> Iterator[ToolSpan]:
    """A span of kind TOOL around one worker tool call; records `turnkeeper.tool_calls` when it
    closes (outcome "ok" unless `finished(is_error=True)` was called, "cancelled" or "error" if
    an exception left it). Call no other tool metric for the same call.

    Args:
        name: The tool's name.
        arguments: The call's input, traced as JSON (`input.value`, cut at 4096 characters).
        call_id: The model's tool_use id.
    """
    attributes: dict[str, AttributeValue] = {
        SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.TOOL.value,
        SpanAttributes.TOOL_NAME: name,
        SpanAttributes.INPUT_VALUE: _arguments_json(arguments),
        SpanAttributes.INPUT_MIME_TYPE: OpenInferenceMimeTypeValues.JSON.value,
    }
    if call_id:
        attributes[SpanAttributes.TOOL_ID] = call_id
    started = time.monotonic()
    with _tracer.start_as_current_span(f"tool_call {name}", attributes=attributes) as span:
        handle = ToolSpan(span)
        try:
            yield handle
        except BaseException as err:
            handle.outcome = "cancelled" if isinstance(err, asyncio.CancelledError) else "error"
            raise
        finally:
            span.set_attribute(OUTCOME, handle.outcome)
            metrics.record_tool_call(name, handle.outcome, time.monotonic() - started)


def outcome_of(err: BaseException) -> str:
    """The metric outcome of a failed call: the typed error's type (a small, fixed set)."""
    if isinstance(err, asyncio.CancelledError):
        return "cancelled"
    if isinstance(err, ApplicationError) and err.type:
        return err.type
    return type(err).__name__


def _arguments_json(arguments: Mapping[str, Any]) -> str:
    text = json.dumps(arguments, ensure_ascii=False, default=str)
    if len(text) > MAX_ARGUMENTS_CHARS:
        return text[:MAX_ARGUMENTS_CHARS] + "…(truncated)"
    return text


def _request_contents(request: ModelRequest) -> dict[str, AttributeValue]:
    messages: list[FlatMessage] = []
    if request.system:
        messages.append(
            {
                MessageAttributes.MESSAGE_ROLE: "system",
                MessageAttributes.MESSAGE_CONTENT: request.system,
            }
        )
    for message in request.messages:
        messages.extend(openinference_messages(message.role, message.content))
    attributes = indexed(SpanAttributes.LLM_INPUT_MESSAGES, messages)
    for i, tool in enumerate(request.tools):
        key = f"{SpanAttributes.LLM_TOOLS}.{i}.{ToolAttributes.TOOL_JSON_SCHEMA}"
        attributes[key] = tool.model_dump_json()
    return attributes
