"""OpenTelemetry for the worker, configured by the standard `OTEL_*` environment variables.

- `OTEL_TRACES_EXPORTER`: `none` (default), `console`, `otlp`, or a comma-separated list.
- `OTEL_METRICS_EXPORTER`: `none` (default), `console`, `otlp`, `prometheus`, or a list.
- OTLP goes over HTTP or gRPC per `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf` default,
  `grpc`); endpoints, headers, timeouts and intervals are the exporters' own `OTEL_*` variables.
- Prometheus serves `/metrics` on `OTEL_EXPORTER_PROMETHEUS_HOST`:`OTEL_EXPORTER_PROMETHEUS_PORT`
  (localhost:9464).
- `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` name the resource.
- Temporal's own SDK metrics: see `turnkeeper.worker.temporal_metrics`.
- `TURNKEEPER_TRACE_TEMPORAL_SPANS=1` adds Temporal's StartActivity/RunActivity/… spans;
  `TURNKEEPER_TRACE_CONTENT=1` puts message contents on spans (`activities.observation.tracing`).

With both exporters `none` nothing is installed: OpenTelemetry's API stays the no-op default and
clients connect without the tracing plugin, so telemetry costs nothing when it is off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from temporalio.contrib.opentelemetry import (
    OpenTelemetryPlugin,
    ReplaySafeMeterProvider,
    ReplaySafeTracerProvider,
    create_tracer_provider,
)
from temporalio.runtime import Runtime, TelemetryConfig

from turnkeeper.client.telemetry_options import use_telemetry
from turnkeeper.ground.logs import get_logger
from turnkeeper.worker.telemetry_exporters import metric_readers, span_exporters
from turnkeeper.worker.temporal_metrics import TelemetryConfigError, temporal_metrics_config

__all__ = ["Telemetry", "TelemetryConfigError", "configure_telemetry"]

TRACES_EXPORTER_ENV: Final = "OTEL_TRACES_EXPORTER"
METRICS_EXPORTER_ENV: Final = "OTEL_METRICS_EXPORTER"
TEMPORAL_SPANS_ENV: Final = "TURNKEEPER_TRACE_TEMPORAL_SPANS"
_TRACE_EXPORTERS: Final = frozenset({"none", "console", "otlp"})
_METRIC_EXPORTERS: Final = frozenset({"none", "console", "otlp", "prometheus"})

log = get_logger(__name__)


@dataclass
class Telemetry:
    """What `configure_telemetry` set up; keep it to flush and shut down at exit."""

    tracer_provider: ReplaySafeTracerProvider | None = None
    meter_provider: MeterProvider | None = None
    temporal_runtime: Runtime | None = None
    temporal_spans: bool = False
    exporters: dict[str, list[str]] = field(default_factory=dict)

    def client_options(self) -> dict[str, Any]:
        """Extra keyword arguments for `Client.connect`: the tracing plugin (workers built on
        the client inherit it) and the runtime that exports Temporal's metrics."""
        options: dict[str, Any] = {}
        if self.tracer_provider is not None:
            options["plugins"] = [OpenTelemetryPlugin(add_temporal_spans=self.temporal_spans)]
        if self.temporal_runtime is not None:
            options["runtime"] = self.temporal_runtime
        return options

    def flush(self, timeout_millis: int = 10_000) -> None:
        if self.tracer_provider is not None:
            self.tracer_provider.force_flush(timeout_millis)
        if self.meter_provider is not None:
            self.meter_provider.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Export what is buffered and stop the exporters."""
        if self.tracer_provider is not None:
            self.tracer_provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()


_configured: Telemetry | None = None


def configure_telemetry(
    service_name: str = "turnkeeper-worker", env: Mapping[str, str] | None = None
) -> Telemetry:
    """Set up tracing and metrics from the environment and install them process-wide.

    Call it once, before connecting clients and building workers (the plugin checks the global
    tracer provider when a worker is built): every later `connect` adds the telemetry's
    `client_options`. Later calls return the first result: OpenTelemetry's global providers can
    be set only once per process.

    Raises:
        TelemetryConfigError: An exporter name or port is not usable.
    """
    global _configured
    if _configured is not None:
        return _configured
    telemetry = build_telemetry(service_name, os.environ if env is None else env)
    if telemetry.tracer_provider is not None:
        trace.set_tracer_provider(telemetry.tracer_provider)
    if telemetry.meter_provider is not None:
        # Workflow code records the turn's own metrics (`workflows/observation/turn_metrics.py`):
        # the wrapper drops what it records while a worker replays history, so nothing counts twice.
        metrics.set_meter_provider(ReplaySafeMeterProvider(telemetry.meter_provider))
    _configured = telemetry
    use_telemetry(telemetry.client_options())
    if telemetry.exporters:
        log.info("telemetry configured", service_name=service_name, **telemetry.exporters)
    return telemetry


def build_telemetry(service_name: str, env: Mapping[str, str]) -> Telemetry:
    """The providers and runtime that `env` asks for, without installing them globally."""
    traces = exporter_names(env, TRACES_EXPORTER_ENV, _TRACE_EXPORTERS)
    metric_names = exporter_names(env, METRICS_EXPORTER_ENV, _METRIC_EXPORTERS)
    temporal_metrics = temporal_metrics_config(env, metric_names)
    telemetry = Telemetry(temporal_spans=_flag(env.get(TEMPORAL_SPANS_ENV)))
    if not traces and not metric_names and temporal_metrics is None:
        return telemetry
    resource = _resource(service_name, env)
    if traces:
        telemetry.tracer_provider = create_tracer_provider(resource=resource)
        for exporter in span_exporters(traces, env):
            telemetry.tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
        telemetry.exporters["traces"] = traces
    if metric_names:
        readers: list[MetricReader] = metric_readers(metric_names, env)
        telemetry.meter_provider = MeterProvider(resource=resource, metric_readers=readers)
        telemetry.exporters["metrics"] = metric_names
    if temporal_metrics is not None:
        telemetry.temporal_runtime = Runtime(telemetry=TelemetryConfig(metrics=temporal_metrics))
        telemetry.exporters["temporal_metrics"] = [type(temporal_metrics).__name__]
    return telemetry


def exporter_names(env: Mapping[str, str], variable: str, known: frozenset[str]) -> list[str]:
    """The exporters a comma-separated `OTEL_*_EXPORTER` names; [] for none or unset."""
    names = [n.strip().lower() for n in env.get(variable, "none").split(",") if n.strip()]
    unknown = sorted(set(names) - known)
    if unknown:
        raise TelemetryConfigError(
            f"{variable} names {', '.join(unknown)}; supported: {', '.join(sorted(known))}"
        )
    return [n for n in dict.fromkeys(names) if n != "none"]


def _resource(service_name: str, env: Mapping[str, str]) -> Resource:
    # OTEL_SERVICE_NAME, when set, names the service as the specification says; the
    # caller's name is only the default. Resource.create adds OTEL_RESOURCE_ATTRIBUTES.
    return Resource.create({SERVICE_NAME: env.get("OTEL_SERVICE_NAME") or service_name})


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes"}
