"""The span exporters and metric readers that `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER`
name. Exporter packages are imported only when named: the gRPC stack is slow to import and
pointless for a worker that exports nothing."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter

from turnkeeper.worker.temporal_metrics import otlp_protocol, prometheus_host_port


def span_exporters(names: list[str], env: Mapping[str, str]) -> list[SpanExporter]:
    exporters: list[SpanExporter] = []
    for name in names:
        if name == "console":
            exporters.append(ConsoleSpanExporter())
        elif name == "otlp":
            exporters.append(_otlp_span_exporter(otlp_protocol(env, "TRACES")))
    return exporters


def metric_readers(names: list[str], env: Mapping[str, str]) -> list[MetricReader]:
    readers: list[MetricReader] = []
    for name in names:
        if name == "console":
            readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter()))
        elif name == "otlp":
            exporter = _otlp_metric_exporter(otlp_protocol(env, "METRICS"))
            readers.append(PeriodicExportingMetricReader(exporter))
        elif name == "prometheus":
            readers.append(_prometheus_reader(env))
    return readers


def _otlp_span_exporter(protocol: str) -> SpanExporter:
    # Constructed without arguments, the exporters read their OTEL_EXPORTER_OTLP_* variables.
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpSpanExporter,
    )

    return HttpSpanExporter()


def _otlp_metric_exporter(protocol: str) -> MetricExporter:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

        return OTLPMetricExporter()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HttpMetricExporter,
    )

    return HttpMetricExporter()


def _prometheus_reader(env: Mapping[str, str]) -> MetricReader:
    from turnkeeper.worker.health import HEALTH_PORT_ENV
    from turnkeeper.worker.prometheus_reader import ServedPrometheusReader

    if env.get(HEALTH_PORT_ENV, "").strip():
        # The worker's health server serves the default registry on its /metrics: one port for
        # the probes and the scrape, as a Kubernetes pod wants.
        from opentelemetry.exporter.prometheus import PrometheusMetricReader

        return PrometheusMetricReader()
    host, port = prometheus_host_port(env)
    return ServedPrometheusReader(host, port)
