"""With `OTEL_METRICS_EXPORTER=prometheus`, our metrics and the Temporal SDK's own are served for
scraping, each on its port, by a client that really talks to the dev server (the rest of the
telemetry set-up is tested in tests/unit/worker/test_telemetry.py)."""

from __future__ import annotations

import asyncio
import socket
import urllib.request

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from turnkeeper.worker.telemetry import build_telemetry

MODEL = "anthropic:claude-sonnet-4-6"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


async def test_prometheus_serves_our_metrics_and_temporals_own(client: Client) -> None:
    ours, temporals = free_port(), free_port()
    env = {
        "OTEL_METRICS_EXPORTER": "prometheus",
        "OTEL_EXPORTER_PROMETHEUS_HOST": "127.0.0.1",
        "OTEL_EXPORTER_PROMETHEUS_PORT": str(ours),
        "TURNKEEPER_TEMPORAL_METRICS_PORT": str(temporals),
    }
    built = build_telemetry("svc", env)
    try:
        assert built.meter_provider is not None
        counter = built.meter_provider.get_meter("test").create_counter("turnkeeper.probe")
        counter.add(3, {"model": MODEL})
        # A client on the telemetry's runtime: Temporal's core counts its requests.
        other = await Client.connect(
            client.service_client.config.target_host,
            namespace=client.namespace,
            data_converter=pydantic_data_converter,
            **built.client_options(),
        )
        await other.count_workflows()
        ours_text, temporal_text = await asyncio.gather(
            asyncio.to_thread(scrape, ours), asyncio.to_thread(scrape, temporals)
        )
    finally:
        built.shutdown()
    assert f'turnkeeper_probe_total{{model="{MODEL}"' in ours_text
    assert "temporal_request" in temporal_text
