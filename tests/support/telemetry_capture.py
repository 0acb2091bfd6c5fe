"""In-memory OpenTelemetry for tests: spans and metrics that tests can read back.

OpenTelemetry's global providers can be set only once per process, so `capture()` installs a
replay-safe tracer provider and a replay-safe meter provider (what `configure_telemetry`
installs) once,
and every test that needs them shares them; a test clears the spans it starts from and reads
metrics as differences.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.contrib.opentelemetry import ReplaySafeMeterProvider, create_tracer_provider

Attributes = Mapping[str, str | bool | int | float]


@dataclass(frozen=True)
class MetricPoints:
    """A snapshot of every data point, by metric name."""

    points: dict[str, list[NumberDataPoint | HistogramDataPoint]]

    def value(self, name: str, **attributes: str | bool) -> float:
        """The sum of a counter over points whose attributes include `attributes`."""
        return sum(
            p.value for p in self._matching(name, attributes) if isinstance(p, NumberDataPoint)
        )

    def count(self, name: str, **attributes: str | bool) -> int:
        """How many values a histogram recorded over points matching `attributes`."""
        return sum(
            p.count for p in self._matching(name, attributes) if isinstance(p, HistogramDataPoint)
        )

    def total(self, name: str, **attributes: str | bool) -> float:
        """The sum of a histogram's values over points matching `attributes`."""
        return sum(
            p.sum for p in self._matching(name, attributes) if isinstance(p, HistogramDataPoint)
        )

    def _matching(
        self, name: str, attributes: Attributes
    ) -> list[NumberDataPoint | HistogramDataPoint]:
        return [
            p
            for p in self.points.get(name, [])
            if all((p.attributes or {}).get(k) == v for k, v in attributes.items())
        ]


@dataclass(frozen=True)
class MetricGrowth:
    """What was recorded between two snapshots (the reader's metrics are cumulative)."""

    before: MetricPoints
    after: MetricPoints

    def value(self, name: str, **attributes: str | bool) -> float:
        return self.after.value(name, **attributes) - self.before.value(name, **attributes)

    def count(self, name: str, **attributes: str | bool) -> int:
        return self.after.count(name, **attributes) - self.before.count(name, **attributes)

    def total(self, name: str, **attributes: str | bool) -> float:
        return self.after.total(name, **attributes) - self.before.total(name, **attributes)


@dataclass(frozen=True)
class Capture:
    span_exporter: InMemorySpanExporter
    metric_reader: InMemoryMetricReader

    def spans(self) -> list[ReadableSpan]:
        return list(self.span_exporter.get_finished_spans())

    def clear_spans(self) -> None:
        self.span_exporter.clear()

    def metrics(self) -> MetricPoints:
        points: dict[str, list[NumberDataPoint | HistogramDataPoint]] = {}
        data = self.metric_reader.get_metrics_data()
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    found = points.setdefault(metric.name, [])
                    found.extend(metric.data.data_points)  # type: ignore[arg-type]
        return MetricPoints(points)

    def growth_since(self, before: MetricPoints) -> MetricGrowth:
        return MetricGrowth(before, self.metrics())


_capture: Capture | None = None


def capture() -> Capture:
    """The process-wide in-memory span exporter and metric reader, installed on first use."""
    global _capture
    if _capture is not None:
        return _capture
    tracer_provider = create_tracer_provider()
    span_exporter = InMemorySpanExporter()
    tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    trace.set_tracer_provider(tracer_provider)
    metric_reader = InMemoryMetricReader()
    meter_provider = ReplaySafeMeterProvider(MeterProvider(metric_readers=[metric_reader]))
    metrics.set_meter_provider(meter_provider)
    if trace.get_tracer_provider() is not tracer_provider:
        raise AssertionError("another test set OpenTelemetry's global tracer provider first")
    if metrics.get_meter_provider() is not meter_provider:
        raise AssertionError("another test set OpenTelemetry's global meter provider first")
    _capture = Capture(span_exporter, metric_reader)
    return _capture
