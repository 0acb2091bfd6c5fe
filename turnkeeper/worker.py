"""Run the turnkeeper worker: `python worker.py [--dev]`.

`--dev` first starts an embedded Temporal dev server (Web UI on http://localhost:8233, state in a
SQLite file under the data directory). Without it the worker connects to the Temporal that
`TEMPORAL_ADDRESS` / `TEMPORAL_PROFILE` describe. Ctrl-C or SIGTERM stops polling and gives
in-flight activities a grace period before the worker exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import signal
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any, Final

import structlog
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Worker

from turnkeeper.activities.store.content_store import ContentStore
from turnkeeper.activities.store.keyring import EncryptionKeyError, Keyring, UnreadableContentError
from turnkeeper.activities.store.stores import open_store
from turnkeeper.activities.wiring import build_activities, worker_workflows, workflow_runner
from turnkeeper.codec_server import CodecServerError
from turnkeeper.connect import TemporalUnreachableError, connect
from turnkeeper.contracts.names import DEFAULT_TASK_QUEUE, SEARCH_ATTRIBUTES, TASK_QUEUE_ENV
from turnkeeper.dev_stack import dev_stack
from turnkeeper.devserver import (
    DEFAULT_NAMESPACE,
    DEFAULT_PORT,
    DevServerError,
    missing_search_attributes,
)
from turnkeeper.env_numbers import SettingsError
from turnkeeper.logging import configure_logging
from turnkeeper.settings import Settings
from turnkeeper.telemetry import TelemetryConfigError, configure_telemetry

# How long in-flight activities (a model call, a tool) may run on after a shutdown request before
# they are cancelled; a cancelled one is retried by the next worker, so this only saves work.
GRACEFUL_SHUTDOWN: Final = timedelta(seconds=30)

# Listing search attributes needs operator rights that a namespace-scoped cloud key may lack.
_UNCHECKABLE: Final = frozenset({RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNIMPLEMENTED})

# Named, not __name__: run as a script this module is `__main__`.
log = structlog.get_logger("turnkeeper.worker")


class WorkerLacksKeyError(RuntimeError):
    """The worker met content it cannot decrypt, so it stopped instead of failing every task."""

    def __init__(self, cause: UnreadableContentError) -> None:
        super().__init__(
            f"worker stopped: {cause}; the task goes back to the queue for a worker that has it"
        )
        self.key_id = cause.key_id


class SearchAttributesMissingError(RuntimeError):
    """The namespace lacks search attributes the workflow sets, so every turn would fail."""

    def __init__(self, names: Sequence[str], namespace: str) -> None:
        commands = "\n".join(
            f"  temporal operator search-attribute create --namespace {namespace} "
            f"--name {name} --type {SEARCH_ATTRIBUTES[name]}"
            for name in names
        )
        super().__init__(
            f"Namespace {namespace!r} lacks the search attributes {', '.join(names)}; "
            f"register them once, then start the worker again:\n{commands}"
        )
        self.names = list(names)


def build_worker(client: Client, settings: Settings, store: ContentStore | None = None) -> Worker:
    """The worker for agent turns on `settings.task_queue`, not yet running."""
    return Worker(
        client,
        task_queue=settings.task_queue,
        workflows=worker_workflows(),
        workflow_runner=workflow_runner(),
        activities=build_activities(settings, client=client, store=store),
        graceful_shutdown_timeout=GRACEFUL_SHUTDOWN,
        **settings.tuning.worker_options(),
    )


async def run_worker(
    settings: Settings,
    client: Client,
    *,
    stop: asyncio.Event | None = None,
    store: ContentStore | None = None,
) -> None:
    """Run a worker until `stop` is set, then shut it down gracefully.

    Args:
        settings: Task queue and folders.
        client: A client from `turnkeeper.connect.connect`.
        stop: Set it to stop the worker. Without one, SIGINT and SIGTERM stop it (which needs the
            main thread); the console command passes its own to run a worker in-process.
        store: The content store the client's converter uses (default: one opened from
            `settings`), so that activities and payloads share one connection pool.

    Raises:
        RuntimeError: The worker failed fatally (for example it lost the server for good).
    """
    worker = build_worker(client, settings, store)
    log.info("worker started", task_queue=settings.task_queue, namespace=client.namespace)
    if stop is not None:
        await _run_until(worker, stop)
        return
    stop = asyncio.Event()
    with _stop_on_signals(stop):
        await _run_until(worker, stop)


async def _run_until(worker: Worker, stop: asyncio.Event) -> None:
    running = asyncio.create_task(worker.run())
    stop_requested = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({running, stop_requested}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop_requested.cancel()
        # Also on cancellation of the caller: never leave a polling worker behind.
        if not running.done():
            log.info("worker shutting down", grace_period_s=GRACEFUL_SHUTDOWN.total_seconds())
            await worker.shutdown()
    await running
    log.info("worker stopped")


@contextlib.contextmanager
def _stop_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set `stop`; a second one cancels the current task (no more draining)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def request_stop(signum: signal.Signals) -> None:
        if stop.is_set():
            log.warning("second stop request, abandoning in-flight work", signal=signum.name)
            if task is not None:
                task.cancel()
            return
        log.info("stop requested, draining (signal again to force)", signal=signum.name)
        stop.set()

    installed: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, request_stop, sig)
        except (NotImplementedError, RuntimeError):
            # Windows, or not the main thread: Ctrl-C arrives as KeyboardInterrupt instead.
            continue
        installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


async def check_search_attributes(client: Client) -> None:
    """Refuse to start on a namespace without the project's search attributes.

    Raises:
        SearchAttributesMissingError: Some are missing; the message gives the commands.
    """
    try:
        missing = await missing_search_attributes(client, client.namespace)
    except RPCError as err:
        if err.status not in _UNCHECKABLE:
            raise
        log.warning(
            "cannot list search attributes, starting without checking them",
            namespace=client.namespace,
            status=err.status.name,
            needed=SEARCH_ATTRIBUTES,
        )
        return
    if missing:
        raise SearchAttributesMissingError(missing, client.namespace)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="worker.py", description=__doc__.splitlines()[0])
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
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    args = parser.parse_args(argv)
    if args.dev and args.address:
        parser.error("--address and --dev exclude each other; --dev-port moves the dev server")
    return args


async def serve(args: argparse.Namespace) -> None:
    """Connect (starting the dev server first with `--dev`) and run the worker until stopped."""
    settings = Settings.from_env()
    if args.task_queue:
        settings = dataclasses.replace(settings, task_queue=args.task_queue)
    stop = asyncio.Event()
    keyring = Keyring.from_env()
    unreadable: list[UnreadableContentError] = []

    def stop_for_missing_key(error: UnreadableContentError) -> None:
        # A worker without the keys of its turns would fail each of their tasks, retried without
        # end: it stops instead, and says which key it lacks, once.
        if not unreadable:
            log.error("encryption key missing, stopping the worker", key_id=error.key_id)
        unreadable.append(error)
        stop.set()

    # Installed before the dev server starts: a SIGTERM during start-up must still unwind through
    # DevServer.stop, since the server runs in its own session and would otherwise outlive us.
    # A stop requested during start-up lets the worker start and drain at once.
    with _stop_on_signals(stop):
        async with contextlib.AsyncExitStack() as stack:
            store = open_store(settings, keyring)
            stack.push_async_callback(store.aclose)
            keys = {"store": store, "keyring": keyring, "on_missing_key": stop_for_missing_key}
            if args.dev:
                client = await _start_dev_server(stack, settings, args, **keys)
            else:
                client = await connect(address=args.address, namespace=args.namespace, **keys)
                await check_search_attributes(client)
            await run_worker(settings, client, stop=stop, store=store)
    if unreadable:
        raise WorkerLacksKeyError(unreadable[0])


async def _start_dev_server(
    stack: contextlib.AsyncExitStack,
    settings: Settings,
    args: argparse.Namespace,
    **connect_options: Any,
) -> Client:
    stack_of_servers = dev_stack(
        settings.data_dir,
        connect_options["store"],
        connect_options["keyring"],
        port=args.dev_port,
        ui_port=args.ui_port,
        namespace=args.namespace or DEFAULT_NAMESPACE,
        codec_port=args.codec_port,
    )
    # Entered on the stack so the servers outlive the worker's drain and stop after it.
    server = await stack.enter_async_context(stack_of_servers)
    # For the person at the terminal, not a diagnostic: where to watch the turns.
    print(f"Temporal Web UI: {server.ui_url}", flush=True)
    # The dev server is local and plain-text: ignore TEMPORAL_* meant for another cluster.
    return await connect(
        address=server.address, namespace=server.namespace, from_env=False, **connect_options
    )


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    configure_logging(args.log_level)
    try:
        # Before any client connects: clients pick up the tracing plugin and metrics runtime.
        telemetry = configure_telemetry()
    except TelemetryConfigError as err:
        raise SystemExit(str(err)) from None
    try:
        asyncio.run(serve(args))
    except (
        TemporalUnreachableError,
        DevServerError,
        CodecServerError,
        SearchAttributesMissingError,
        SettingsError,
        EncryptionKeyError,
        WorkerLacksKeyError,
    ) as err:
        # A sentence for the person who started the worker, not a traceback.
        raise SystemExit(str(err)) from None
    except (KeyboardInterrupt, asyncio.CancelledError):
        # Stopped a second time while draining, or Ctrl-C where signal handlers are unavailable.
        raise SystemExit(130) from None
    finally:
        # Export the spans and metrics still buffered.
        telemetry.shutdown()


if __name__ == "__main__":
    main()
