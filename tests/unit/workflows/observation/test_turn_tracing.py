"""The turn's span carries every guardrail verdict so far as one attribute, rewritten at each
verdict, so a trace shows them without the report."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from turnkeeper.contracts.guardrails import GuardrailDecision
from turnkeeper.workflows.observation.turn_tracing import SPAN_ATTR_GUARDRAIL_DECISIONS, TurnSpan


def test_the_span_lists_each_guardrail_verdict() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    span = provider.get_tracer("test").start_span("turn")
    redacted = GuardrailDecision(
        guardrail="secrets", stage="input", verdict="redact", enforced=True
    )
    logged = GuardrailDecision(
        guardrail="size_cap", stage="tool_result", call_id="c1", verdict="block", enforced=False
    )

    TurnSpan(span).guardrail_decided([redacted])
    TurnSpan(span).guardrail_decided([redacted, logged])
    TurnSpan(None).guardrail_decided([redacted])  # no tracing: nothing to do, no error
    span.end()

    [finished] = exporter.get_finished_spans()
    assert finished.attributes is not None
    assert list(finished.attributes[SPAN_ATTR_GUARDRAIL_DECISIONS]) == [  # type: ignore[arg-type]
        "secrets:input:redact:enforced",
        "size_cap:tool_result:block:log_only",
    ]
