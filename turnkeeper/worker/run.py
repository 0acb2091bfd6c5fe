"""The turnkeeper worker: `turnkeeper.run_worker(...)` from Python, `python worker.py` from a shell.

With `dev=True` it first starts an embedded Temporal dev server (Web UI on http://localhost:8233,
state in a SQLite file under the data directory) and a codec server for its Web UI. Without it the
worker connects to the Temporal that `TEMPORAL_ADDRESS` / `TEMPORAL_PROFILE` describe. Ctrl-C or
SIGTERM stops polling and gives in-flight activities a grace period before the worker exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Worker

from turnkeeper.activities.evals.registered import RegisteredEvaluator
from turnkeeper.activities.guardrails.guardrails import Guardrail
from turnkeeper.activities.output.validators import OutputValidator
from turnkeeper.activities.skills.skill import Skill
from turnkeeper.activities.tools.registry import WorkerTool
from turnkeeper.client.connection import connect
from turnkeeper.contracts.names import SEARCH_ATTRIBUTES
from turnkeeper.devtools.dev_stack import dev_stack
from turnkeeper.devtools.devserver import (
    DEFAULT_NAMESPACE,
    DEFAULT_PORT,
    DevServer,
    PortFlags,
    missing_search_attributes,
)
from turnkeeper.ground.logs import get_logger
from turnkeeper.payloads.keyring import Keyring, UnreadableContentError
from turnkeeper.worker.health import WorkerHealth, health_port, health_server
from turnkeeper.worker.logging import configure_logging
from turnkeeper.worker.plain_structlog import structlog
from turnkeeper.worker.plugin import TurnkeeperPlugin
from turnkeeper.worker.required_encryption import encryption_of
from turnkeeper.worker.settings import Settings
from turnkeeper.worker.telemetry import configure_telemetry
from turnkeeper.worker.versioning import WorkerVersion, worker_version

# How long in-flight activities (a model call, a tool) may run on after a shutdown request before
# they are cancelled; a cancelled one is retried by the next worker, so this only saves work.
GRACEFUL_SHUTDOWN: Final = timedelta(seconds=30)

# Listing search attributes needs operator rights that a namespace-scoped cloud key may lack.
_UNCHECKABLE: Final = frozenset({RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNIMPLEMENTED})

# The error about a taken port names the arguments that choose them.
RUN_WORKER_PORT_FLAGS: Final = PortFlags("run_worker(dev_port=…)", "run_worker(ui_port=…)")

# Named, not __name__: run as a script this module is `__main__`.
log = get_logger("turnkeeper.worker")


class WorkerLacksKeyError(RuntimeError):
    """The worker met content it cannot decrypt, so it stopped instead of failing every task."""

    def __init__(self, cause: UnreadableContentError) -> None:
        super().__init__(
            f"worker stopped: {cause}; the task goes back to the queue for a worker that has it"
        )
        self.key_id = cause.key_id


class NamespaceMissingError(RuntimeError):
    """The namespace the worker was pointed at does not exist on that server."""

    def __init__(self, namespace: str) -> None:
        super().__init__(
            f"Namespace {namespace!r} does not exist on this Temporal server: create it (on a "
            f"self-hosted server: temporal operator namespace create --namespace {namespace}), or "
            "point TEMPORAL_NAMESPACE / --namespace at one that exists"
        )
        self.namespace = namespace


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


@dataclass(frozen=True)
class WorkerOptions:
    """What `run_worker` and `python worker.py` are asked for, beyond the environment's settings.

    Attributes:
        tools: The caller's own tools (`@turnkeeper.tool`), offered next to the built-in ones.
        builtin_tools: Also offer the four workspace tools (`list_files`, `read_file`,
            `search_files`, `write_file`).
        output_validators: The caller's output validators (`@turnkeeper.output_validator`).
        skills: The caller's skills defined in code (`turnkeeper.Skill`).
        guardrails: The caller's guardrails (`@turnkeeper.guardrail`).
        mcp_config: JSON file of MCP servers; None: `TURNKEEPER_MCP_CONFIG`.
        task_queue: None: `AGENT_TASK_QUEUE` or `agent-turns`.
        dev: First start the embedded dev server (and reuse one already running).
        address, namespace: The Temporal to connect to (not with `dev`); None: the environment.
        dev_port, ui_port, codec_port: Where `dev` puts the dev server, its UI, its codec server.
        port_flags: How the user chooses `dev_port` and `ui_port` (`--dev-port` from a shell).
        deployment, build_id: The Worker Deployment version to poll as; None: from
            `TURNKEEPER_DEPLOYMENT_NAME` / `TURNKEEPER_BUILD_ID`; no deployment: unversioned.
        health_port: Port of `/healthz`, `/readyz` and `/metrics`; None: `TURNKEEPER_HEALTH_PORT`,
            unset: no health server.
    """

    tools: tuple[WorkerTool, ...] = ()
    builtin_tools: bool = True
    output_validators: tuple[OutputValidator, ...] = ()
    evaluators: tuple[RegisteredEvaluator, ...] = ()
    skills: tuple[Skill, ...] = ()
    guardrails: tuple[Guardrail, ...] = ()
    mcp_config: Path | None = None
    task_queue: str | None = None
    dev: bool = False
    address: str | None = None
    namespace: str | None = None
    dev_port: int = DEFAULT_PORT
    ui_port: int | None = None
    codec_port: int = 0
    port_flags: PortFlags = RUN_WORKER_PORT_FLAGS
    deployment: str | None = None
    build_id: str | None = None
    health_port: int | None = None

    def version(self) -> WorkerVersion | None:
        """Raises VersioningConfigError when the settings cannot name a version."""
        return worker_version(self.deployment, self.build_id)

    def settings(self) -> Settings:
        settings = Settings.from_env()
        if self.task_queue:
            settings = dataclasses.replace(settings, task_queue=self.task_queue)
        if self.mcp_config:
            settings = dataclasses.replace(settings, mcp_config=Path(self.mcp_config).resolve())
        return settings


async def run_worker(
    tools: Sequence[WorkerTool] = (),
    *,
    builtin_tools: bool = True,
    output_validators: Sequence[OutputValidator] = (),
    evaluators: Sequence[RegisteredEvaluator] = (),
    skills: Sequence[Skill] = (),
    guardrails: Sequence[Guardrail] = (),
    mcp_config: str | Path | None = None,
    task_queue: str | None = None,
    dev: bool = False,
    address: str | None = None,
    namespace: str | None = None,
    dev_port: int = DEFAULT_PORT,
    ui_port: int | None = None,
) -> None:
    """Run the turnkeeper worker, with your own tools next to the built-in ones, until SIGINT or
    SIGTERM (or until the task running it is cancelled); in-flight calls get a grace period.

    The same worker as `python worker.py`: settings come from the same variables
    (`AGENT_WORKSPACE`, `TURNKEEPER_*`, `TEMPORAL_*`, `ANTHROPIC_*`, `OTEL_*`), its clients'
    converter encrypts with `TURNKEEPER_ENCRYPTION_KEYS`, and it logs the same JSON lines at
    INFO on stderr (the turn record) unless the application configured logging itself.
    Its worker is a plain Temporal `Worker` with a `TurnkeeperPlugin`; to run turns inside a
    worker of your own, beside your own workflows, give that plugin to it instead.

    Args:
        tools: Functions decorated with `@turnkeeper.tool`; an agent offers them by name
            (`agent.tools`).
        builtin_tools: Also offer the workspace tools; False for a worker of your tools only.
        output_validators: Functions decorated with `@turnkeeper.output_validator`; an agent
            names those that check its final answer (`agent.output_validators`).
        evaluators: Functions decorated with `@turnkeeper.evaluator`; an evaluation dataset
            names those that score its cases (`turnkeeper eval`).
        skills: `turnkeeper.Skill`s defined in code, beside those of the folder
            `TURNKEEPER_SKILLS_DIR`; an agent names those it may load (`agent.skills`).
        guardrails: Functions decorated with `@turnkeeper.guardrail`, beside the built-in
            `secrets` and `size_cap`; an agent names those that check its task input, tool
            results and final answer (`agent.guardrails`).
        mcp_config: A JSON file of MCP servers (default: `TURNKEEPER_MCP_CONFIG`).
        task_queue: The queue to poll (default: `AGENT_TASK_QUEUE` or `agent-turns`).
        dev: First start an embedded Temporal dev server with its Web UI (no Docker).
        address: Temporal `host:port` (default: `TEMPORAL_ADDRESS`, the profile, localhost:7233).
        namespace: The namespace (default: `TEMPORAL_NAMESPACE` or `default`).
        dev_port: With `dev`, the gRPC port of the dev server (a Temporal server already
            listening there is used as it is).
        ui_port: With `dev`, the port of its Web UI (default: `dev_port` + 1000).

    Raises:
        TypeError: Something in `tools` is not a `@turnkeeper.tool`, in `output_validators`
            not a `@turnkeeper.output_validator`, or in `skills` not a `turnkeeper.Skill`.
        SettingsError: A variable cannot be used (`TURNKEEPER_SKILLS_DIR` names a folder that
            cannot be read, …); the message names it.
        ValueError: Two tools (or output validators, or skills) share a name, `dev` with an
            `address`, ports without `dev`, or an MCP config file that cannot be used
            (`McpConfigError`, naming the file and the field).
        DevServerError: With `dev`, something other than a Temporal server holds `dev_port`,
            something holds `ui_port`, or the server did not start; the message says which.
        TemporalUnreachableError: Nothing answered at the address.
        SearchAttributesMissingError: The namespace lacks the search attributes turns set.
        WorkerLacksKeyError: A turn's content was encrypted with a key this worker lacks.
        EncryptionKeyError: `TURNKEEPER_ENCRYPTION_KEYS` is malformed, or
            `TURNKEEPER_REQUIRE_ENCRYPTION` is set without it.
        TelemetryConfigError: An `OTEL_*` exporter name or port is not usable.
    """
    if dev and address:
        raise ValueError("dev=True starts its own server: give no address")
    if not dev and (dev_port != DEFAULT_PORT or ui_port is not None):
        raise ValueError("dev_port and ui_port place the dev server: they need dev=True")
    # What `python worker.py` sets up before it serves: without it an application's worker
    # dropped the whole turn record (INFO) and ignored the OTEL_* variables.
    if not logging.getLogger().handlers and not structlog.is_configured():
        configure_logging("INFO")
    # Before any client connects: clients pick up the tracing plugin and metrics runtime.
    telemetry = configure_telemetry()
    options = WorkerOptions(
        tools=tuple(tools),
        builtin_tools=builtin_tools,
        output_validators=tuple(output_validators),
        evaluators=tuple(evaluators),
        skills=tuple(skills),
        guardrails=tuple(guardrails),
        mcp_config=Path(mcp_config) if mcp_config else None,
        task_queue=task_queue,
        dev=dev,
        address=address,
        namespace=namespace,
        dev_port=dev_port,
        ui_port=ui_port,
    )
    try:
        await serve(options)
    finally:
        telemetry.flush()  # the spans and metrics still buffered


def build_worker(
    client: Client,
    settings: Settings,
    plugin: TurnkeeperPlugin,
    version: WorkerVersion | None = None,
) -> Worker:
    """The worker for agent turns on `settings.task_queue`, not yet running: `plugin` brings
    the workflows and activities, as it does to an application's own worker; with a `version`,
    a versioned worker of that Worker Deployment version."""
    versioning: dict[str, Any] = {}
    if version is not None:
        versioning["deployment_config"] = version.deployment_config()
    return Worker(
        client,
        task_queue=settings.task_queue,
        plugins=[plugin],
        graceful_shutdown_timeout=GRACEFUL_SHUTDOWN,
        **versioning,
        **settings.tuning.worker_options(),
    )


async def run_turn_worker(
    settings: Settings,
    client: Client,
    *,
    stop: asyncio.Event | None = None,
    plugin: TurnkeeperPlugin | None = None,
    version: WorkerVersion | None = None,
) -> None:
    """Run a worker on a connected client until `stop` is set, then shut it down gracefully.

    Args:
        settings: Task queue and folders.
        client: A client from `turnkeeper.client.connection.connect`.
        stop: Set it to stop the worker. Without one, SIGINT and SIGTERM stop it (which needs the
            main thread); the console command passes its own to run a worker in-process.
        plugin: The worker's tools, providers and content store (default: the built-in
            workspace tools and the store `settings` names); its store should be the one the
            client's converter uses, so that activities and payloads share one connection pool.
        version: The Worker Deployment version to poll as (default: unversioned).

    Raises:
        RuntimeError: The worker failed fatally (for example it lost the server for good).
    """
    worker = build_worker(client, settings, plugin or TurnkeeperPlugin(settings=settings), version)
    log.info(
        "worker started",
        task_queue=settings.task_queue,
        namespace=client.namespace,
        version=version.canonical if version else None,
        encryption=encryption_of(client),
    )
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
        # Each stop before its log line: whatever becomes of the line, the worker stops.
        if stop.is_set():
            if task is not None:
                task.cancel()
            log.warning("second stop request, abandoning in-flight work", signal=signum.name)
            return
        stop.set()
        log.info("stop requested, draining (signal again to force)", signal=signum.name)

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
        NamespaceMissingError: The namespace itself does not exist.
    """
    try:
        missing = await missing_search_attributes(client, client.namespace)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise NamespaceMissingError(client.namespace) from None
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


async def serve(
    options: WorkerOptions, *, on_dev_server: Callable[[DevServer], None] | None = None
) -> None:
    """Connect (starting the dev server first with `dev`) and run the worker until stopped.

    Args:
        on_dev_server: Called once the `dev` server serves (the command line shows its Web UI;
            a library prints nothing).
    """
    settings = options.settings()
    keyring = Keyring.from_env()
    # Checks the tools, the workspace, the providers, MCP and the keys before anything connects.
    plugin = TurnkeeperPlugin(
        options.tools,
        builtin_tools=options.builtin_tools,
        output_validators=options.output_validators,
        evaluators=options.evaluators,
        skills=options.skills,
        guardrails=options.guardrails,
        settings=settings,
        keyring=keyring,
    )
    stop = asyncio.Event()
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
    version = options.version()
    port = options.health_port if options.health_port is not None else health_port()
    health = WorkerHealth(stopping=stop)
    with _stop_on_signals(stop):
        async with contextlib.AsyncExitStack() as stack:
            if port is not None:
                # First, so the liveness probe answers while the worker connects.
                await stack.enter_async_context(health_server(health, port))
            store = plugin.store
            stack.push_async_callback(store.aclose)
            keys = {
                "store": store,
                "keyring": keyring,
                "on_missing_key": stop_for_missing_key,
                "require_encryption": settings.require_encryption,
            }
            if options.dev:
                client = await _start_dev_server(stack, settings, options, on_dev_server, **keys)
            else:
                client = await connect(address=options.address, namespace=options.namespace, **keys)
                await check_search_attributes(client)
            health.client = client
            await run_turn_worker(settings, client, stop=stop, plugin=plugin, version=version)
    if unreadable:
        raise WorkerLacksKeyError(unreadable[0])


async def _start_dev_server(
    stack: contextlib.AsyncExitStack,
    settings: Settings,
    options: WorkerOptions,
    on_dev_server: Callable[[DevServer], None] | None,
    **connect_options: Any,
) -> Client:
    stack_of_servers = dev_stack(
        settings.data_dir,
        connect_options["store"],
        connect_options["keyring"],
        port=options.dev_port,
        ui_port=options.ui_port,
        namespace=options.namespace or DEFAULT_NAMESPACE,
        codec_port=options.codec_port,
        port_flags=options.port_flags,
    )
    # Entered on the stack so the servers outlive the worker's drain and stop after it.
    server = await stack.enter_async_context(stack_of_servers)
    if on_dev_server is not None:
        on_dev_server(server)
    # The dev server is local and plain-text: ignore TEMPORAL_* meant for another cluster.
    return await connect(
        address=server.address, namespace=server.namespace, from_env=False, **connect_options
    )
