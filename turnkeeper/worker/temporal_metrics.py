"""Temporal's own SDK metrics (workflow task latency, activity failures, poller counts…), which
Temporal's Rust core exports itself, chosen by the same `OTEL_*` variables as ours.

`TURNKEEPER_TEMPORAL_METRICS` = `none`, `otlp` or `prometheus` overrides the choice; unset, it
follows `OTEL_METRICS_EXPORTER` (`otlp` or `prometheus`; `console` has no Core counterpart).
Core's Prometheus endpoint cannot share the port of ours, so it listens on
`TURNKEEPER_TEMPORAL_METRICS_PORT`, by default the next port after `OTEL_EXPORTER_PROMETHEUS_PORT`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final
from urllib.parse import unquote

from temporalio.runtime import OpenTelemetryConfig, PrometheusConfig

TEMPORAL_METRICS_ENV: Final = "TURNKEEPER_TEMPORAL_METRICS"
TEMPORAL_METRICS_PORT_ENV: Final = "TURNKEEPER_TEMPORAL_METRICS_PORT"

DEFAULT_PROMETHEUS_HOST: Final = "localhost"
DEFAULT_PROMETHEUS_PORT: Final = 9464  # the OpenTelemetry specification's default
_DEFAULT_GRPC_ENDPOINT: Final = "http://localhost:4317"
_DEFAULT_HTTP_ENDPOINT: Final = "http://localhost:4318"

TemporalMetricsConfig = OpenTelemetryConfig | PrometheusConfig


class TelemetryConfigError(ValueError):
    """An `OTEL_*` or `TURNKEEPER_*` telemetry variable has a value we cannot use."""


def temporal_metrics_config(
    env: Mapping[str, str], metrics_exporters: list[str]
) -> TemporalMetricsConfig | None:
    """Where Temporal's core should send its metrics, or None for nowhere.

    Args:
        env: The environment.
        metrics_exporters: The parsed `OTEL_METRICS_EXPORTER` list.
    """
    choice = env.get(TEMPORAL_METRICS_ENV, "").strip().lower()
    if not choice:
        choice = next((e for e in metrics_exporters if e in ("otlp", "prometheus")), "none")
    if choice == "none":
        return None
    if choice == "otlp":
        return _otlp_config(env)
    if choice == "prometheus":
        return PrometheusConfig(bind_address=_prometheus_address(env), durations_as_seconds=True)
    raise TelemetryConfigError(
        f"{TEMPORAL_METRICS_ENV}={choice!r} is not one of none, otlp, prometheus"
    )


def otlp_protocol(env: Mapping[str, str], signal: str) -> str:
    """`grpc` or `http/protobuf` for `signal` ("TRACES" or "METRICS"), default http/protobuf."""
    protocol = (
        env.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if protocol not in ("grpc", "http/protobuf"):
        raise TelemetryConfigError(
            f"OTLP protocol {protocol!r} is not supported; use grpc or http/protobuf"
        )
    return protocol


def prometheus_host_port(env: Mapping[str, str]) -> tuple[str, int]:
    """`OTEL_EXPORTER_PROMETHEUS_HOST` and `_PORT`, with the specification's defaults."""
    host = env.get("OTEL_EXPORTER_PROMETHEUS_HOST") or DEFAULT_PROMETHEUS_HOST
    return host, _port(env, "OTEL_EXPORTER_PROMETHEUS_PORT", DEFAULT_PROMETHEUS_PORT)


def _prometheus_address(env: Mapping[str, str]) -> str:
    host, port = prometheus_host_port(env)
    # Core parses a socket address, not a host name: "localhost:9465" fails the runtime's start.
    host = "127.0.0.1" if host == "localhost" else host
    return f"{host}:{_port(env, TEMPORAL_METRICS_PORT_ENV, port + 1)}"


def _otlp_config(env: Mapping[str, str]) -> OpenTelemetryConfig:
    http = otlp_protocol(env, "METRICS") == "http/protobuf"
    url = env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
    if not url:
        base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        base = base or (_DEFAULT_HTTP_ENDPOINT if http else _DEFAULT_GRPC_ENDPOINT)
        # As the OTLP exporters do: the generic endpoint is a base URL for HTTP, a host for gRPC.
        url = base.rstrip("/") + "/v1/metrics" if http else base
    headers = _headers(
        env.get("OTEL_EXPORTER_OTLP_METRICS_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS")
    )
    return OpenTelemetryConfig(url=url, headers=headers, http=http, durations_as_seconds=True)


def _headers(value: str | None) -> dict[str, str]:
    """`key1=value1,key2=value2`, URL-encoded, as the OTLP specification writes headers."""
    headers: dict[str, str] = {}
    for item in (value or "").split(","):
        key, sep, val = item.partition("=")
        if sep and key.strip():
            headers[unquote(key.strip())] = unquote(val.strip())
    return headers


def _port(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise TelemetryConfigError(f"{name}={raw!r} is not a port number") from None
