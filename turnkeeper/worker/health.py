"""The worker's probes and metrics on one port, `TURNKEEPER_HEALTH_PORT`, for Kubernetes and
Prometheus.

- `/healthz` (liveness): 200 while the process's event loop answers.
- `/readyz` (readiness): 200 when the worker is connected to its namespace, the namespace has the
  search attributes turns set, and the worker is not draining; 503 with the reason otherwise.
- `/metrics`: prometheus_client's default registry, where the OpenTelemetry Prometheus reader
  registers our turn metrics when `OTEL_METRICS_EXPORTER=prometheus` (it then serves them here
  instead of on a port of its own).

aiohttp rather than prometheus_client's own HTTP server: the readiness check is a gRPC call on
the worker's client, which lives on the worker's event loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.client.settings_error import SettingsError
from turnkeeper.devtools.devserver import missing_search_attributes
from turnkeeper.ground.logs import get_logger

if TYPE_CHECKING:
    from aiohttp import web

HEALTH_PORT_ENV: Final = "TURNKEEPER_HEALTH_PORT"
HEALTH_HOST_ENV: Final = "TURNKEEPER_HEALTH_HOST"
# All interfaces: the kubelet and Prometheus reach a pod on its own address, not on loopback.
# The port says nothing secret (states, counts), and it is only opened when asked for.
DEFAULT_HEALTH_HOST: Final = "0.0.0.0"
# Shorter than a Kubernetes probe's default timeout (1 s is the default; the manifests use 5 s).
READY_CHECK_TIMEOUT_S: Final = 4.0

log = get_logger(__name__)


def health_port(env: Mapping[str, str] | None = None) -> int | None:
    """`TURNKEEPER_HEALTH_PORT`, or None when unset (no health server).

    Raises:
        SettingsError: The value is not a port number.
    """
    raw = (os.environ if env is None else env).get(HEALTH_PORT_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 0 <= int(raw) <= 65535:
        raise SettingsError(f"{HEALTH_PORT_ENV}={raw!r} is not a port number (0-65535)")
    return int(raw)


@dataclass
class WorkerHealth:
    """What the probes report; the worker fills it in as it starts, runs and drains."""

    client: Client | None = None
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    async def readiness(self) -> str | None:
        """None when ready, else why not (one line, no secret)."""
        if self.stopping.is_set():
            return "draining: the worker is shutting down"
        if self.client is None:
            return "starting: not connected to Temporal yet"
        try:
            return await asyncio.wait_for(
                _namespace_problem(self.client), timeout=READY_CHECK_TIMEOUT_S
            )
        except TimeoutError:
            return f"Temporal did not answer within {READY_CHECK_TIMEOUT_S:g} s"
        except RPCError as err:
            return f"Temporal refused: {err.status.name}"


async def _namespace_problem(client: Client) -> str | None:
    namespace = client.namespace
    try:
        missing = await missing_search_attributes(client, namespace)
    except RPCError as err:
        if err.status not in {RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNIMPLEMENTED}:
            raise
        # A namespace-scoped cloud key may not list search attributes (the worker warned at
        # start); reaching the namespace is then all that can be checked.
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=namespace)
        )
        return None
    if missing:
        return f"namespace {namespace!r} lacks the search attributes {', '.join(missing)}"
    return None


def health_app(health: WorkerHealth) -> web.Application:
    # aiohttp is imported here, when probes are served, not with the worker: a worker without
    # TURNKEEPER_HEALTH_PORT should not hold its 10 MiB.
    from aiohttp import web

    async def live(_: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def ready(_: web.Request) -> web.Response:
        problem = await health.readiness()
        if problem is None:
            return web.Response(text="ready\n")
        return web.Response(status=503, text=f"not ready: {problem}\n")

    async def metrics(_: web.Request) -> web.Response:
        # Collecting walks every metric; off the loop so a large registry cannot stall tasks.
        body = await asyncio.to_thread(generate_latest, REGISTRY)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/healthz", live)
    app.router.add_get("/readyz", ready)
    app.router.add_get("/metrics", metrics)
    return app


@asynccontextmanager
async def health_server(
    health: WorkerHealth, port: int, host: str | None = None
) -> AsyncIterator[int]:
    """Serves the probes while the block runs; yields the bound port (useful with port 0).

    Raises:
        SettingsError: It cannot listen there (a host that is not an address, a port in use).
    """
    from aiohttp import web  # see `health_app`

    runner = web.AppRunner(health_app(health), access_log=None)
    await runner.setup()
    try:
        where = host or os.environ.get(HEALTH_HOST_ENV) or DEFAULT_HEALTH_HOST
        site = web.TCPSite(runner, where, port)
        try:
            await site.start()
        except OSError as err:
            raise SettingsError(
                f"the health server cannot listen on {where}:{port} "
                f"({HEALTH_HOST_ENV}, {HEALTH_PORT_ENV}): {err.strerror or err}"
            ) from None
        bound = int(runner.addresses[0][1])
        log.info("health server started", port=bound)
        yield bound
    finally:
        await runner.cleanup()
