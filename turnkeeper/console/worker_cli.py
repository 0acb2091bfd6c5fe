"""`python worker.py [--dev]`: the worker's command line, over `turnkeeper.worker.run`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Sequence
from typing import NoReturn

from turnkeeper.activities.a2a.config import A2aConfigError
from turnkeeper.activities.mcp.config import McpConfigError
from turnkeeper.activities.providers.endpoints import ProvidersConfigError
from turnkeeper.client.connection import TemporalUnreachableError
from turnkeeper.client.settings_error import SettingsError
from turnkeeper.contracts.names import DEFAULT_TASK_QUEUE, TASK_QUEUE_ENV
from turnkeeper.devtools.codec_errors import CodecServerError
from turnkeeper.devtools.devserver import DEFAULT_PORT, DevServer, DevServerError, PortFlags
from turnkeeper.ground.process_exit import exit_without_teardown
from turnkeeper.payloads.keyring import EncryptionKeyError
from turnkeeper.payloads.stores import StoreLocationError
from turnkeeper.worker.health import HEALTH_PORT_ENV
from turnkeeper.worker.logging import configure_logging
from turnkeeper.worker.run import (
    NamespaceMissingError,
    SearchAttributesMissingError,
    WorkerLacksKeyError,
    WorkerOptions,
    serve,
)
from turnkeeper.worker.telemetry import TelemetryConfigError, configure_telemetry
from turnkeeper.worker.versioning import BUILD_ID_ENV, DEPLOYMENT_NAME_ENV, VersioningConfigError


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="worker.py", description="Run the turnkeeper worker.")
    parser.add_argument(
        "--dev",
        action="store_true",
        help="first start an embedded Temporal dev server (or reuse one already running)",
    )
    parser.add_argument(
        "--task-queue",
        help=f"task queue to poll (default: ${TASK_QUEUE_ENV} or {DEFAULT_TASK_QUEUE})",
    )
    parser.add_argument(
        "--address", help="Temporal host:port (default: $TEMPORAL_ADDRESS, profile, localhost:7233)"
    )
    parser.add_argument("--namespace", help="Temporal namespace (default: $TEMPORAL_NAMESPACE)")
    parser.add_argument(
        "--dev-port", type=int, default=DEFAULT_PORT, help="gRPC port of the --dev server"
    )
    parser.add_argument("--ui-port", type=int, help="Web UI port of the --dev server (gRPC + 1000)")
    parser.add_argument(
        "--codec-port",
        type=int,
        default=0,
        help="loopback port of the --dev Web UI's codec server (default: any free port)",
    )
    parser.add_argument(
        "--deployment",
        help=f"Worker Deployment to poll as a version of (default: ${DEPLOYMENT_NAME_ENV}; "
        "none: an unversioned worker)",
    )
    parser.add_argument(
        "--build-id",
        help=f"build id of this version (default: ${BUILD_ID_ENV}, else the package version "
        "and a hash of the workflow code)",
    )
    parser.add_argument(
        "--health-port",
        type=int,
        help=f"serve /healthz, /readyz and /metrics on this port (default: ${HEALTH_PORT_ENV})",
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        # Checked here: an unknown name reached logging.setLevel and ended in a traceback.
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="DEBUG, INFO, WARNING or ERROR",
    )
    args = parser.parse_args(argv)
    if args.dev and args.address:
        parser.error("--address and --dev exclude each other; --dev-port moves the dev server")
    return args


def options_of(args: argparse.Namespace) -> WorkerOptions:
    return WorkerOptions(
        task_queue=args.task_queue,
        dev=args.dev,
        address=args.address,
        namespace=args.namespace,
        dev_port=args.dev_port,
        ui_port=args.ui_port,
        codec_port=args.codec_port,
        port_flags=PortFlags("--dev-port", "--ui-port"),
        deployment=args.deployment,
        build_id=args.build_id,
        health_port=args.health_port,
    )


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Runs the worker, then ends the process without interpreter teardown: the SDK's Rust
    threads can outlive the interpreter and abort it (temporalio/sdk-python#300), which turned a
    clean exit, or the one line of a refused start, into a core dump."""
    try:
        _run(argv)
        code: object = 0
    except SystemExit as stop:
        code = stop.code
    exit_without_teardown(code)


def _run(argv: Sequence[str] | None) -> None:
    args = parse_args(argv)
    configure_logging(args.log_level)
    try:
        # Before any client connects: clients pick up the tracing plugin and metrics runtime.
        telemetry = configure_telemetry()
    except TelemetryConfigError as err:
        raise SystemExit(str(err)) from None
    try:
        asyncio.run(serve(options_of(args), on_dev_server=_show_web_ui))
    except (
        TemporalUnreachableError,
        DevServerError,
        CodecServerError,
        SearchAttributesMissingError,
        NamespaceMissingError,
        SettingsError,
        StoreLocationError,
        EncryptionKeyError,
        WorkerLacksKeyError,
        ProvidersConfigError,
        McpConfigError,
        A2aConfigError,
        VersioningConfigError,
    ) as err:
        # A sentence for the person who started the worker, not a traceback.
        raise SystemExit(str(err)) from None
    except (KeyboardInterrupt, asyncio.CancelledError):
        # Stopped a second time while draining, or Ctrl-C where signal handlers are unavailable.
        raise SystemExit(130) from None
    finally:
        # Export the spans and metrics still buffered.
        telemetry.shutdown()


def _show_web_ui(server: DevServer) -> None:
    """For the person at the terminal, not a diagnostic: where to watch the turns. A stdout
    whose reader is gone (`| tee` after a Ctrl-C) must not stop the worker from starting."""
    with contextlib.suppress(OSError, ValueError):
        print(f"Temporal Web UI: {server.ui_url}", flush=True)


# `python -m turnkeeper.console.worker_cli`: worker.py without a checkout.
if __name__ == "__main__":
    main()
