"""Telemetry set-up from `OTEL_*`, the model-call and tool spans, and the project's metrics."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from opentelemetry.trace import StatusCode
from temporalio.contrib.opentelemetry import OpenTelemetryPlugin, ReplaySafeTracerProvider
from temporalio.exceptions import ApplicationError
from temporalio.runtime import OpenTelemetryConfig, PrometheusConfig
from turnkeeper.activities.observation.tracing import (
    CONTENT_ENV,
    MAX_ARGUMENTS_CHARS,
    model_call_span,
    tool_span,
)
from turnkeeper.activities.providers.provider import ModelRequest, ModelResponse
from turnkeeper.contracts.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from turnkeeper.contracts.tools import ToolDefinition
from turnkeeper.contracts.turn import Usage

from tests.support.telemetry_capture import Capture, capture
from turnkeeper.client import telemetry_options as connect_telemetry
from turnkeeper.worker import telemetry as telemetry_module
from turnkeeper.worker.telemetry import TelemetryConfigError, build_telemetry, configure_telemetry
from turnkeeper.worker.temporal_metrics import temporal_metrics_config

MODEL = "anthropic:claude-sonnet-4-6"


@pytest.fixture
def telemetry() -> Iterator[Capture]:
    captured = capture()
    captured.clear_spans()
    yield captured


# ---- configuration from the environment ---------------------------------------------------


def test_nothing_is_set_up_by_default() -> None:
    built = build_telemetry("svc", {})
    assert (built.tracer_provider, built.meter_provider, built.temporal_runtime) == (None,) * 3
    assert built.client_options() == {}


def test_traces_get_the_replay_safe_provider_and_clients_the_plugin() -> None:
    built = build_telemetry("svc", {"OTEL_TRACES_EXPORTER": "console, otlp"})
    try:
        assert isinstance(built.tracer_provider, ReplaySafeTracerProvider)
        assert built.meter_provider is None
        [plugin] = built.client_options()["plugins"]
        assert isinstance(plugin, OpenTelemetryPlugin)
        assert built.exporters == {"traces": ["console", "otlp"]}
    finally:
        built.shutdown()


def test_an_unknown_exporter_is_refused_with_the_supported_names() -> None:
    with pytest.raises(TelemetryConfigError, match="OTEL_METRICS_EXPORTER names jaeger"):
        build_telemetry("svc", {"OTEL_METRICS_EXPORTER": "jaeger"})
    with pytest.raises(TelemetryConfigError, match="grpc or http/protobuf"):
        build_telemetry(
            "svc", {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
        )


def test_configure_without_exporters_installs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry_module, "_configured", None)
    monkeypatch.setattr(connect_telemetry, "_options", {})
    first = configure_telemetry(env={"OTEL_TRACES_EXPORTER": "none"})
    assert first.tracer_provider is None and first.meter_provider is None
    assert configure_telemetry(env={"OTEL_TRACES_EXPORTER": "console"}) is first
    assert connect_telemetry.telemetry_options() == {}


def test_configured_traces_reach_every_later_connect(monkeypatch: pytest.MonkeyPatch) -> None:
    """`connect` adds what `configure_telemetry` configured, though the client never imports
    the worker: the tracing plugin, for every client and the workers built on it."""
    monkeypatch.setattr(telemetry_module, "_configured", None)
    monkeypatch.setattr(connect_telemetry, "_options", {})
    # The process-wide provider can be set once; the test's capture() may own it already.
    monkeypatch.setattr(telemetry_module.trace, "set_tracer_provider", lambda provider: None)
    configured = configure_telemetry(env={"OTEL_TRACES_EXPORTER": "console"})
    try:
        [plugin] = connect_telemetry.telemetry_options()["plugins"]
        assert isinstance(plugin, OpenTelemetryPlugin)
    finally:
        configured.shutdown()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"OTEL_METRICS_EXPORTER": "console"}, None),
        (
            {"OTEL_METRICS_EXPORTER": "otlp"},
            OpenTelemetryConfig(
                url="http://localhost:4318/v1/metrics", headers={}, http=True,
                durations_as_seconds=True,
            ),
        ),
        (
            {
                "OTEL_METRICS_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317",
                "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s%3Dcret,x-team=agents",
            },
            OpenTelemetryConfig(
                url="http://collector:4317", headers={"api-key": "s=cret", "x-team": "agents"},
                http=False, durations_as_seconds=True,
            ),
        ),
        (
            {"OTEL_METRICS_EXPORTER": "prometheus", "OTEL_EXPORTER_PROMETHEUS_PORT": "9100"},
            PrometheusConfig(bind_address="127.0.0.1:9101", durations_as_seconds=True),
        ),
        ({"OTEL_METRICS_EXPORTER": "prometheus", "TURNKEEPER_TEMPORAL_METRICS": "none"}, None),
        (
            {"TURNKEEPER_TEMPORAL_METRICS": "prometheus", "TURNKEEPER_TEMPORAL_METRICS_PORT": "9"},
            PrometheusConfig(bind_address="127.0.0.1:9", durations_as_seconds=True),
        ),
    ],
)  # fmt: skip
def test_temporal_sdk_metrics_follow_the_same_variables(
    env: dict[str, str], expected: object
) -> None:
    names = [n for n in env.get("OTEL_METRICS_EXPORTER", "").split(",") if n]
    assert temporal_metrics_config(env, names) == expected


# ---- spans of model calls and tool calls ---------------------------------------------------


def model_request() -> ModelRequest:
    return ModelRequest(
        model="claude-sonnet-4-6",
        system="Be brief.",
        messages=[
            Message(role="user", content="Summarise notes.md"),
            Message(
                role="assistant",
                content=[ToolUseBlock(id="toolu_1", name="read_file", input={"path": "notes.md"})],
            ),
            Message(role="user", content=[ToolResultBlock(tool_use_id="toolu_1", content="hi")]),
        ],
        tools=[ToolDefinition(name="read_file", description="Read", input_schema={})],
        max_tokens=512,
    )


def model_response() -> ModelResponse:
    return ModelResponse(
        content=[TextBlock(text="The notes say hi.")],
        stop_reason="end_turn",
        usage=Usage(input_tokens=100, output_tokens=20, cache_read_tokens=30),
        model="claude-sonnet-4-6",
    )


async def answered_model_call() -> None:
    with model_call_span(MODEL, model_request(), iteration=2, turn_id="turn-1") as span:
        span.answered(model_response(), 0.0123)


async def test_a_model_call_span_carries_openinference_attributes(telemetry: Capture) -> None:
    before = telemetry.metrics()
    await answered_model_call()

    [span] = telemetry.spans()
    assert span.name == "model_call claude-sonnet-4-6"
    attributes = dict(span.attributes or {})
    assert attributes["openinference.span.kind"] == "LLM"
    assert attributes["llm.model_name"] == "claude-sonnet-4-6"
    assert attributes["llm.provider"] == "anthropic"
    assert attributes["llm.token_count.prompt"] == 130  # cached input tokens count too
    assert attributes["llm.token_count.completion"] == 20
    assert attributes["llm.token_count.total"] == 150
    assert attributes["llm.token_count.prompt_details.cache_read"] == 30
    assert attributes["llm.cost.total"] == 0.0123
    assert attributes["llm.finish_reason"] == "end_turn"
    assert attributes["turnkeeper.iteration"] == 2
    assert json.loads(str(attributes["llm.invocation_parameters"])) == {"max_tokens": 512}
    assert not [key for key in attributes if key.startswith(("llm.input_messages", "llm.output"))]

    grew = telemetry.growth_since(before)
    assert grew.value("turnkeeper.model_calls", model=MODEL, outcome="ok") == 1
    for token_type, count in {"input": 100, "output": 20, "cache_read": 30}.items():
        assert grew.value("turnkeeper.tokens", model=MODEL, token_type=token_type) == count
    assert grew.value("turnkeeper.cost", model=MODEL) == pytest.approx(0.0123)


async def test_message_contents_are_traced_only_when_allowed(
    telemetry: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONTENT_ENV, "1")
    await answered_model_call()

    attributes = dict(telemetry.spans()[0].attributes or {})
    prefix = "llm.input_messages"
    assert attributes[f"{prefix}.0.message.role"] == "system"
    assert attributes[f"{prefix}.1.message.content"] == "Summarise notes.md"
    assert attributes[f"{prefix}.2.message.tool_calls.0.tool_call.function.name"] == "read_file"
    assert json.loads(
        str(attributes[f"{prefix}.2.message.tool_calls.0.tool_call.function.arguments"])
    ) == {"path": "notes.md"}
    assert attributes[f"{prefix}.3.message.role"] == "tool"
    assert attributes[f"{prefix}.3.message.tool_call_id"] == "toolu_1"
    assert attributes["llm.output_messages.0.message.content"] == "The notes say hi."
    assert "read_file" in str(attributes["llm.tools.0.tool.json_schema"])


async def test_a_failed_model_call_counts_under_its_error_type(telemetry: Capture) -> None:
    before = telemetry.metrics()
    with (
        pytest.raises(ApplicationError),
        model_call_span(MODEL, model_request(), iteration=1, turn_id="turn-1"),
    ):
        raise ApplicationError("slow down", type="LlmRateLimited")

    [span] = telemetry.spans()
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["turnkeeper.outcome"] == "LlmRateLimited"
    grew = telemetry.growth_since(before)
    assert grew.value("turnkeeper.model_calls", model=MODEL, outcome="LlmRateLimited") == 1


async def test_a_tool_span_has_the_arguments_and_the_outcome(telemetry: Capture) -> None:
    before = telemetry.metrics()
    with tool_span("read_file", {"path": "notes.md"}, call_id="toolu_1") as span:
        span.finished(is_error=False, output="hello")
    with tool_span("write_file", {"path": "x", "content": "y" * 10_000}) as span:
        span.finished(is_error=True, output="denied")

    ok, failed = telemetry.spans()
    assert ok.name == "tool_call read_file"
    assert dict(ok.attributes or {}) == {
        "openinference.span.kind": "TOOL",
        "tool.name": "read_file",
        "tool.id": "toolu_1",
        "input.value": '{"path": "notes.md"}',
        "input.mime_type": "application/json",
        "turnkeeper.outcome": "ok",
    }
    assert failed.status.status_code is StatusCode.ERROR
    assert len(str((failed.attributes or {})["input.value"])) < MAX_ARGUMENTS_CHARS + 20
    grew = telemetry.growth_since(before)
    for tool, outcome in (("read_file", "ok"), ("write_file", "error")):
        assert grew.value("turnkeeper.tool_calls", tool=tool, outcome=outcome) == 1
