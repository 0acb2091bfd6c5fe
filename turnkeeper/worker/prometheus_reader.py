"""A Prometheus metric reader that owns its `/metrics` HTTP server, so shutting the meter
provider down also frees the port (a worker restarted in-process can bind it again)."""

from __future__ import annotations

from typing import Any

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from prometheus_client import start_http_server


class ServedPrometheusReader(PrometheusMetricReader):
    """Serves prometheus_client's default registry, where the reader registers its collector."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__()
        self._server, self._thread = start_http_server(port=port, addr=host)

    @property
    def port(self) -> int:
        """The bound port (useful when asked for port 0)."""
        return int(self._server.server_address[1])

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        super().shutdown(timeout_millis, **kwargs)
        self._server.shutdown()
        self._server.server_close()
