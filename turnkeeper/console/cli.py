"""`turnkeeper`: start agent turns, follow them, decide what waits for a human, run the demo.

Only the command line lives here; `commands.py` and `demo.py` do the work. Exit codes: 0 done,
1 the turn failed or the command was refused, 2 the command line or the request is invalid.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.text import Text

from turnkeeper.client.connection import TemporalUnreachableError
from turnkeeper.client.errors import InvalidTurnRequest, TurnUnavailable
from turnkeeper.client.fork import ForkChanges
from turnkeeper.client.requests import RequestError, RunOptions
from turnkeeper.client.settings_error import SettingsError
from turnkeeper.console import (
    attachment_command,
    commands,
    deploy_command,
    extend_command,
    fork_command,
    http_commands,
    mcp_command,
    policy_command,
    replay_command,
    sandbox_command,
    schedule_command,
    steer_command,
    tenants_command,
    waiting_command,
)
from turnkeeper.console.eval_cli import eval_app
from turnkeeper.console.render import local_user
from turnkeeper.console.signing import DEFAULT_EXPIRES_IN, PASSPHRASE_ENV, Signer, signer_for
from turnkeeper.console.target import DEFAULT_UI_URL
from turnkeeper.console.terminal import CommandError, ConsoleApp, err, log_to_stderr, out
from turnkeeper.contracts.budget_extension import ExtendBudgetInput
from turnkeeper.contracts.names import DEFAULT_TASK_QUEUE, TASK_QUEUE_ENV
from turnkeeper.contracts.signals import ApproveInput
from turnkeeper.contracts.tenants import TenantCaps, tenant_problem
from turnkeeper.devtools.codec_server import (
    CODEC_TOKEN_ENV,
    DEFAULT_CODEC_HOST,
    DEFAULT_CODEC_PORT,
    DEFAULT_UI_ORIGIN,
    CodecServerError,
)
from turnkeeper.devtools.devserver import DevServerError
from turnkeeper.payloads.keyring import EncryptionKeyError, UnreadableContentError
from turnkeeper.payloads.stores import StoreLocationError

app = ConsoleApp(
    name="turnkeeper",
    help="Durable AI-agent turns on Temporal: run, follow, approve. Try `turnkeeper demo`.",
    no_args_is_help=True,
    # Frame locals can hold prompts and API keys; a traceback must never print them.
    pretty_exceptions_show_locals=False,
)

_LOG_LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)
_CONNECTION = "Connection"
_REQUEST = "Request"
Address = Annotated[
    str | None,
    typer.Option(
        help="Temporal host:port (default: TEMPORAL_ADDRESS, profile, localhost:7233)",
        rich_help_panel=_CONNECTION,
        show_default=False,
    ),
]
Namespace = Annotated[
    str | None,
    typer.Option(
        help="Temporal namespace (default: TEMPORAL_NAMESPACE, profile, default)",
        rich_help_panel=_CONNECTION,
        show_default=False,
    ),
]
UiUrl = Annotated[
    str,
    typer.Option(
        "--ui-url",
        envvar="TURNKEEPER_UI_URL",
        help="Base URL of the Temporal Web UI",
        rich_help_panel=_CONNECTION,
    ),
]
TaskQueue = Annotated[
    str,
    typer.Option(
        "--task-queue",
        envvar=TASK_QUEUE_ENV,
        help="Task queue of the worker",
        rich_help_panel=_CONNECTION,
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables")]
Full = Annotated[
    bool,
    typer.Option("--full", help="Every pending call's input whole (a file's content too)"),
]
WorkflowId = Annotated[str, typer.Argument(metavar="ID", help="Workflow id of the turn")]
CallId = Annotated[
    str, typer.Argument(metavar="CALL_ID", help="Tool call id, or 'all' for every pending one")
]
Approver = Annotated[
    str | None, typer.Option(help="Who decides (default: your user name)", show_default=False)
]


def _flag(help_text: str) -> Any:
    """An optional override of the request: None means "keep the agent file's or the default"."""
    return typer.Option(help=help_text, rich_help_panel=_REQUEST, show_default=False)


@app.callback()
def main(
    log_level: Annotated[
        str, typer.Option(envvar="TURNKEEPER_LOG_LEVEL", help="Level of diagnostics on stderr")
    ] = "WARNING",
) -> None:
    if logging.getLevelName(log_level.upper()) not in _LOG_LEVELS:
        raise typer.BadParameter(f"not a level: {log_level!r}", param_hint="--log-level")
    log_to_stderr(log_level.upper())


@app.command()
def run(
    task_input: Annotated[
        str | None, typer.Argument(metavar="INPUT", help="The task; '-' reads it from stdin")
    ] = None,
    agent: Annotated[Path | None, _flag("Agent definition file (JSON)")] = None,
    agent_id: Annotated[str | None, _flag("Agent id (default: assistant)")] = None,
    model: Annotated[str | None, _flag("provider:model, e.g. anthropic:claude-sonnet-4-6")] = None,
    fallback_model: Annotated[list[str] | None, _flag("Fallback model (repeatable)")] = None,
    fallback_cooldown_s: Annotated[
        float | None, _flag("Seconds a failed model is passed over (default 60)")
    ] = None,
    fallback_after_attempts: Annotated[
        int | None, _flag("Attempts before moving to the next model (default 2)")
    ] = None,
    fallback_on: Annotated[
        list[str] | None, _flag("Refusal that moves to the next model: auth, … (repeatable)")
    ] = None,
    prompt_cache: Annotated[
        bool | None, typer.Option("--prompt-cache/--no-prompt-cache", help="Anthropic caching")
    ] = None,
    system: Annotated[str | None, _flag("System prompt")] = None,
    tool: Annotated[list[str] | None, _flag("Worker tool the agent has (repeatable)")] = None,
    max_iterations: Annotated[int | None, _flag("Most model calls in the turn")] = None,
    max_tokens: Annotated[int | None, _flag("Most tokens per answer")] = None,
    time_budget_ms: Annotated[int | None, _flag("Time budget (ms, human waits excluded)")] = None,
    cost_budget_usd: Annotated[float | None, _flag("Cost budget (USD)")] = None,
    max_tool_interactions: Annotated[int | None, _flag("Most rounds of tool calls")] = None,
    allowed_tool: Annotated[list[str] | None, _flag("Tool this task may use (repeatable)")] = None,
    require_approval: Annotated[
        list[str] | None, _flag("Tool needing approval, or '*' (repeatable)")
    ] = None,
    approval_timeout_s: Annotated[float | None, _flag("Seconds to wait for a decision")] = None,
    task_id: Annotated[str | None, _flag("Task id (default: task-<random>)")] = None,
    tenant: Annotated[str | None, _flag("Tenant the turn is billed to")] = None,
    external_tools: Annotated[Path | None, _flag("External tools file (JSON list)")] = None,
    history: Annotated[Path | None, _flag("Earlier report or messages (JSON) to continue")] = None,
    attach: Annotated[
        list[Path] | None, _flag("Image or PDF to attach to the task (repeatable)")
    ] = None,
    workflow_id: Annotated[
        str | None,
        typer.Option(
            "--id",
            help="Workflow id (default: turn-<agent>-<random>); letters, digits and . _ - : @, "
            "never one the runtime keeps",
        ),
    ] = None,
    wait: Annotated[bool, typer.Option(help="Follow the turn to its report")] = True,
    as_json: Json = False,
    address: Address = None,
    namespace: Namespace = None,
    task_queue: TaskQueue = DEFAULT_TASK_QUEUE,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """Start a turn from flags or an agent file, and follow it to its report."""
    if task_input == "-":
        task_input = sys.stdin.read().strip()
    options = RunOptions(
        input=task_input,
        agent_file=agent,
        agent_id=agent_id,
        model=model,
        fallback_models=fallback_model,
        fallback_cooldown_s=fallback_cooldown_s,
        fallback_after_attempts=fallback_after_attempts,
        fallback_on=fallback_on,
        prompt_cache=prompt_cache,
        system=system,
        tools=tool,
        max_iterations=max_iterations,
        max_tokens=max_tokens,
        time_budget_ms=time_budget_ms,
        cost_budget_usd=cost_budget_usd,
        max_tool_interactions=max_tool_interactions,
        allowed_tools=allowed_tool,
        require_approval=require_approval,
        approval_timeout_s=approval_timeout_s,
        task_id=task_id,
        external_tools_file=external_tools,
        history_file=history,
        tenant=tenant,
    )
    flags = commands.RunFlags(task_queue, workflow_id, wait, as_json, tuple(attach or ()))
    _execute(commands.run(commands.Connection(address, namespace, ui_url), options, flags))


@app.command()
def status(
    workflow_id: WorkflowId,
    as_json: Json = False,
    full: Full = False,
    address: Address = None,
    namespace: Namespace = None,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """Show a turn's state, counters and pending calls."""
    connection = commands.Connection(address, namespace, ui_url)
    _execute(commands.status(connection, workflow_id, as_json, full))


@app.command()
def transcript(
    workflow_id: WorkflowId,
    as_json: Json = False,
    address: Address = None,
    namespace: Namespace = None,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """Show a turn's messages so far."""
    connection = commands.Connection(address, namespace, ui_url)
    _execute(commands.transcript(connection, workflow_id, as_json))


@app.command()
def standing(
    agent_id: Annotated[str, typer.Argument(help="The agent's id")],
    as_json: Json = False,
    address: Address = None,
    namespace: Namespace = None,
) -> None:
    """List the tools an agent may run without asking (standing approvals)."""
    connection = commands.Connection(address, namespace, DEFAULT_UI_URL)
    _execute(commands.standing(connection, agent_id, as_json))


@app.command()
def revoke(
    agent_id: Annotated[str, typer.Argument(help="The agent's id")],
    tool: Annotated[str, typer.Argument(help="The tool whose standing approval ends")],
    by: Approver = None,
    address: Address = None,
    namespace: Namespace = None,
) -> None:
    """Revoke a standing approval: the agent's next turns ask again."""
    connection = commands.Connection(address, namespace, DEFAULT_UI_URL)
    _execute(commands.revoke_standing(connection, agent_id, tool, by or local_user()))


@app.command()
def watch(
    workflow_id: WorkflowId,
    address: Address = None,
    namespace: Namespace = None,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """Follow a turn live (iteration, cost against budget, tool calls, pending approvals); a
    finished turn is replayed from its first event."""
    _execute(commands.watch(commands.Connection(address, namespace, ui_url), workflow_id))


@app.command()
def result(
    workflow_id: WorkflowId,
    as_json: Json = False,
    address: Address = None,
    namespace: Namespace = None,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """Wait for a turn's end and show its report."""
    _execute(commands.result(commands.Connection(address, namespace, ui_url), workflow_id, as_json))


_SIGNING = "Signing"
KeyFile = Annotated[
    Path | None,
    typer.Option(
        "--key",
        help="Sign with this OpenSSH Ed25519 private key (needs --approver); passphrase from "
        f"{PASSPHRASE_ENV} or asked",
        rich_help_panel=_SIGNING,
        show_default=False,
    ),
]
ExpiresIn = Annotated[
    str,
    typer.Option(
        "--expires-in",
        help="How long the signature stays valid: seconds, or 90s, 15m, 2h",
        rich_help_panel=_SIGNING,
    ),
]
PrintPayload = Annotated[
    bool,
    typer.Option(
        "--print",
        help="Print the approve signal's payload (signed, with --key) instead of sending it",
        rich_help_panel=_SIGNING,
    ),
]


@app.command()
def approve(
    workflow_id: WorkflowId,
    call_id: CallId,
    reason: Annotated[str, typer.Option(help="Why")] = "",
    approver: Approver = None,
    remember: Annotated[
        bool, typer.Option(help="Approve this tool for this agent from now on")
    ] = False,
    key: KeyFile = None,
    expires_in: ExpiresIn = DEFAULT_EXPIRES_IN,
    print_payload: PrintPayload = False,
    address: Address = None,
    namespace: Namespace = None,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """Approve a pending tool call."""
    decision = ApproveInput(
        call_id=call_id,
        approved=True,
        reason=reason,
        remember=remember,
        approver=_approver_name(approver, key),
    )
    connection = commands.Connection(address, namespace, ui_url)
    _decide(connection, workflow_id, decision, key, expires_in, print_payload)


@app.command()
def reject(
    workflow_id: WorkflowId,
    call_id: CallId,
    reason: Annotated[str, typer.Option(help="Why; the model reads it")],
    approver: Approver = None,
    key: KeyFile = None,
    expires_in: ExpiresIn = DEFAULT_EXPIRES_IN,
    print_payload: PrintPayload = False,
    address: Address = None,
    namespace: Namespace = None,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """Reject a pending tool call; the model gets an error result with the reason."""
    decision = ApproveInput(
        call_id=call_id,
        approved=False,
        reason=reason,
        approver=_approver_name(approver, key),
    )
    connection = commands.Connection(address, namespace, ui_url)
    _decide(connection, workflow_id, decision, key, expires_in, print_payload)


def _approver_name(approver: str | None, key: Path | None) -> str:
    """The user name stands in for an unsigned decision only: a key is listed under the name
    the approver chose, which `--approver` must give."""
    if approver is None:
        return "" if key is not None else local_user()
    return approver


def _decide(
    connection: commands.Connection,
    workflow_id: str,
    decision: ApproveInput,
    key: Path | None,
    expires_in: str,
    print_payload: bool,
) -> None:
    """approve and reject: sign the decision when there is a key, then send it or print it."""
    try:
        signer = signer_for(key, decision.approver, expires_in)
    except CommandError as error:
        err.print(Text(f"error: {error.message}", style="red"), soft_wrap=True)
        raise typer.Exit(error.exit_code) from None
    if print_payload:
        _execute(
            commands.print_decision(connection, workflow_id, decision.call_id, decision, signer)
        )
    _execute(commands.decide(connection, workflow_id, decision.call_id, decision, signer))


Author = Annotated[
    str | None,
    typer.Option(help="Who sends it (default: your user name)", show_default=False),
]


@app.command()
def steer(
    workflow_id: WorkflowId,
    message: Annotated[str, typer.Argument(help="What the model reads before its next call")],
    author: Author = None,
    key: KeyFile = None,
    expires_in: ExpiresIn = DEFAULT_EXPIRES_IN,
    address: Address = None,
    namespace: Namespace = None,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """Add a message to a running turn's conversation, read before its next model call."""
    if not message.strip():
        err.print(Text("error: MESSAGE: a steer needs a message that is not empty", style="red"))
        raise typer.Exit(2)
    name, signer = _author_and_signer(author, key, expires_in)
    connection = commands.Connection(address, namespace, ui_url)
    _execute(steer_command.steer(connection, workflow_id, message, name, signer))


@app.command()
def interrupt(
    workflow_id: WorkflowId,
    reason: Annotated[str, typer.Option(help="Why (kept in the report)")] = "",
    author: Author = None,
    key: KeyFile = None,
    expires_in: ExpiresIn = DEFAULT_EXPIRES_IN,
    address: Address = None,
    namespace: Namespace = None,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """Stop a running turn at its next safe point; it ends with outcome interrupted."""
    name, signer = _author_and_signer(author, key, expires_in)
    connection = commands.Connection(address, namespace, ui_url)
    _execute(steer_command.interrupt(connection, workflow_id, reason, name, signer))


@app.command()
def cancel(
    workflow_id: WorkflowId,
    reason: Annotated[str, typer.Option(help="Why (kept with the cancellation)")] = "",
    author: Author = None,
    key: KeyFile = None,
    expires_in: ExpiresIn = DEFAULT_EXPIRES_IN,
    address: Address = None,
    namespace: Namespace = None,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """Cancel a turn; with --key through the signed cancel update, which a turn whose
    approvers have keys requires."""
    name, signer = _author_and_signer(author, key, expires_in)
    connection = commands.Connection(address, namespace, ui_url)
    _execute(steer_command.cancel(connection, workflow_id, reason, name, signer))


def _author_and_signer(
    author: str | None, key: Path | None, expires_in: str
) -> tuple[str, Signer | None]:
    """Who sends a steer, an interrupt or a cancel, and the signer of its payload (with --key)."""
    name = _approver_name(author, key)
    return name, _signer_or_exit(key, name, expires_in)


def _signer_or_exit(key: Path | None, name: str, expires_in: str) -> Signer | None:
    try:
        return signer_for(key, name, expires_in)
    except CommandError as error:
        err.print(Text(f"error: {error.message}", style="red"), soft_wrap=True)
        raise typer.Exit(error.exit_code) from None


_AMOUNTS = "Amounts (at least one)"


@app.command()
def extend(
    workflow_id: WorkflowId,
    cost_usd: Annotated[
        float | None,
        typer.Option(help="USD added to the cost budget", rich_help_panel=_AMOUNTS),
    ] = None,
    time_ms: Annotated[
        int | None,
        typer.Option(help="Milliseconds added to the time budget", rich_help_panel=_AMOUNTS),
    ] = None,
    iterations: Annotated[
        int | None,
        typer.Option(help="Iterations added to max_iterations", rich_help_panel=_AMOUNTS),
    ] = None,
    tool_interactions: Annotated[
        int | None,
        typer.Option(
            help="Tool interactions added to max_tool_interactions", rich_help_panel=_AMOUNTS
        ),
    ] = None,
    reason: Annotated[str, typer.Option(help="Why")] = "",
    approver: Approver = None,
    key: KeyFile = None,
    expires_in: ExpiresIn = DEFAULT_EXPIRES_IN,
    print_payload: Annotated[
        bool,
        typer.Option(
            "--print",
            help="Print the extend_budget payload (signed, with --key) instead of sending it",
            rich_help_panel=_SIGNING,
        ),
    ] = False,
    address: Address = None,
    namespace: Namespace = None,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """Give a turn waiting for a budget extension (state awaiting_budget) more budget."""
    try:
        extension = ExtendBudgetInput(
            cost_usd=cost_usd,
            time_ms=time_ms,
            iterations=iterations,
            tool_interactions=tool_interactions,
            reason=reason,
            approver=_approver_name(approver, key),
        )
    except ValidationError as error:
        problems = "; ".join(
            f"--{'-'.join(str(p) for p in e['loc']).replace('_', '-') or 'extension'}: {e['msg']}"
            if e["loc"]
            else e["msg"].removeprefix("Value error, ")
            for e in error.errors()
        )
        err.print(Text(f"error: {problems}", style="red"), soft_wrap=True)
        raise typer.Exit(2) from None
    try:
        signer = signer_for(key, extension.approver, expires_in)
    except CommandError as error:
        err.print(Text(f"error: {error.message}", style="red"), soft_wrap=True)
        raise typer.Exit(error.exit_code) from None
    connection = commands.Connection(address, namespace, ui_url)
    _execute(extend_command.extend(connection, workflow_id, extension, signer, print_payload))


@app.command()
def submit(
    workflow_id: WorkflowId,
    call_id: Annotated[str, typer.Argument(metavar="CALL_ID", help="The external call's id")],
    output: Annotated[str, typer.Option(help="The result: JSON if it parses, else text")],
    error: Annotated[bool, typer.Option("--error", help="The result is an error")] = False,
    address: Address = None,
    namespace: Namespace = None,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """Submit the result of an external tool call."""
    connection = commands.Connection(address, namespace, ui_url)
    _execute(commands.submit(connection, workflow_id, call_id, output, error))


@app.command()
def pending(
    as_json: Json = False,
    full: Full = False,
    task_queue: Annotated[
        str | None, typer.Option(help="Only turns on this task queue", show_default=False)
    ] = None,
    address: Address = None,
    namespace: Namespace = None,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """List every turn waiting for an approval or an external result."""
    connection = commands.Connection(address, namespace, ui_url)
    _execute(commands.pending(connection, task_queue, as_json, full))


@app.command()
def waiting(
    as_json: Json = False,
    task_queue: Annotated[
        str | None, typer.Option(help="Only turns on this task queue", show_default=False)
    ] = None,
    address: Address = None,
    namespace: Namespace = None,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """List every turn parked by a wait call: what it waits for, and until when."""
    connection = commands.Connection(address, namespace, ui_url)
    _execute(waiting_command.waiting(connection, task_queue, as_json))


@app.command()
def chat(
    agent: Annotated[
        Path | None, typer.Option(help="Agent definition file (JSON); needed for a new session")
    ] = None,
    session: Annotated[
        str | None,
        typer.Option(
            "--session", help="Session id: go on with it, or start it (default: a new id)"
        ),
    ] = None,
    address: Address = None,
    namespace: Namespace = None,
    task_queue: TaskQueue = DEFAULT_TASK_QUEUE,
    ui_url: UiUrl = DEFAULT_UI_URL,
) -> None:
    """Talk to an agent: a session of many turns, each remembering the earlier ones."""
    from turnkeeper.console.chat import ChatOptions, run_chat  # the demo's modules: see `demo`

    options = ChatOptions(
        agent_file=agent,
        session_id=session,
        task_queue=task_queue,
        address=address,
        namespace=namespace,
        ui_url=ui_url,
    )
    _execute(run_chat(options))


@app.command("demo")
def demo_command(
    yes: Annotated[bool, typer.Option("--yes", help="Approve without asking")] = False,
    no: Annotated[bool, typer.Option("--no", help="Reject without asking")] = False,
    workspace: Annotated[
        Path | None, typer.Option(help="Folder to summarise (default: ./workspace)")
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="Dev server database and logs (default: ./.turnkeeper)")
    ] = None,
    port: Annotated[int, typer.Option(help="gRPC port of the dev server")] = 7233,
    ui_port: Annotated[int, typer.Option(help="Web UI port of the dev server")] = 8233,
    task_queue: TaskQueue = DEFAULT_TASK_QUEUE,
) -> None:
    """The offline demo: dev server, worker and a turn on the scripted demo model."""
    if yes and no:
        err.print("error: --yes and --no exclude each other")
        raise typer.Exit(2)
    answer = "yes" if yes else "no" if no else None
    # Imported here, like the other commands that start servers or workers: a worker's and a
    # dev server's modules would cost every other command's start.
    from turnkeeper.console import demo

    options = demo.DemoOptions(
        answer=answer,
        workspace=workspace,
        data_dir=data_dir,
        port=port,
        ui_port=ui_port,
        task_queue=task_queue,
    )
    _execute(demo.run_demo(options))


keys_app = typer.Typer(help="Encryption keys for TURNKEEPER_ENCRYPTION_KEYS.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
app.add_typer(http_commands.tokens_app, name="tokens")
app.add_typer(eval_app, name="eval")
app.command("serve")(http_commands.serve_command)
app.command("mcp")(mcp_command.mcp_command)


@keys_app.command("new")
def keys_new(
    key_id: Annotated[
        str | None,
        typer.Option(
            "--id", help="Key id (default: k and the current UTC time)", show_default=False
        ),
    ] = None,
) -> None:
    """Print a fresh key entry: put it first in TURNKEEPER_ENCRYPTION_KEYS, keep the old ones."""
    from turnkeeper.console import codec_command  # the codec server's modules: see `demo`

    try:
        line = codec_command.new_key_line(key_id)
    except EncryptionKeyError as error:
        err.print(Text(f"error: {error}", style="red"), soft_wrap=True)
        raise typer.Exit(2) from None
    out.print(line, soft_wrap=True)


attachment_app = typer.Typer(help="A turn's images and documents.")
app.add_typer(attachment_app, name="attachment")


@attachment_app.command("get")
def attachment_get(
    workflow_id: WorkflowId,
    digest: Annotated[
        str, typer.Argument(metavar="DIGEST", help="The attachment's sha256:… reference")
    ],
    to: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="File to write (default: stdout)", show_default=False),
    ] = None,
    address: Address = None,
    namespace: Namespace = None,
) -> None:
    """Write an image or document of a turn (as its transcript names it) to a file or stdout."""
    connection = commands.Connection(address, namespace, DEFAULT_UI_URL)
    _execute(attachment_command.get(connection, workflow_id, digest, to))


sandbox_app = typer.Typer(
    help="The sandbox folder of run_python and run_shell.", no_args_is_help=True
)
app.add_typer(sandbox_app, name="sandbox")


@sandbox_app.command("get")
def sandbox_get(
    workflow_id: Annotated[str, typer.Argument(metavar="TURN", help="Workflow id of the turn")],
    path: Annotated[str, typer.Argument(metavar="PATH", help="The file's path in the folder")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write it here (default: stdout)", show_default=False),
    ] = None,
    address: Address = None,
    namespace: Namespace = None,
) -> None:
    """One file of an ended turn's sandbox folder, as its last call left it."""
    connection = commands.Connection(address, namespace, DEFAULT_UI_URL)
    _execute(sandbox_command.get_file(connection, workflow_id, path, output))


tenants_app = typer.Typer(
    help="Tenants: every tenant's spend today and this month, and its caps.",
    invoke_without_command=True,
)
app.add_typer(tenants_app, name="tenants")
TenantArg = Annotated[str, typer.Argument(metavar="NAME", help="The tenant's name")]


def _tenant(name: str) -> str:
    problem = tenant_problem(name)
    if problem:
        err.print(Text(f"error: {problem}", style="red"), soft_wrap=True)
        raise typer.Exit(2)
    return name


@tenants_app.callback()
def tenants_list(
    ctx: typer.Context,
    as_json: Json = False,
    address: Address = None,
    namespace: Namespace = None,
) -> None:
    """Every tenant: spend today and this month (UTC), caps, calls in flight."""
    if ctx.invoked_subcommand is not None:
        return
    connection = commands.Connection(address, namespace, DEFAULT_UI_URL)
    _execute(tenants_command.list_tenants(connection, as_json))


@tenants_app.command("show")
def tenants_show(
    name: TenantArg, as_json: Json = False, address: Address = None, namespace: Namespace = None
) -> None:
    """One tenant's spend and caps."""
    connection = commands.Connection(address, namespace, DEFAULT_UI_URL)
    _execute(tenants_command.show(connection, _tenant(name), as_json))


@tenants_app.command("set")
def tenants_set(
    name: TenantArg,
    usd_per_day: Annotated[
        float | None, typer.Option(min=0, help="Daily cap in USD (UTC day; none: no cap)")
    ] = None,
    usd_per_month: Annotated[
        float | None, typer.Option(min=0, help="Monthly cap in USD (UTC month; none: no cap)")
    ] = None,
    as_json: Json = False,
    address: Address = None,
    namespace: Namespace = None,
    task_queue: TaskQueue = DEFAULT_TASK_QUEUE,
) -> None:
    """Set a tenant's caps (both replace the old ones); turns waiting for them go on."""
    caps = TenantCaps(usd_per_day=usd_per_day, usd_per_month=usd_per_month)
    connection = commands.Connection(address, namespace, DEFAULT_UI_URL)
    _execute(tenants_command.set_tenant_caps(connection, _tenant(name), caps, task_queue, as_json))


deploy_app = typer.Typer(
    help="Worker Deployment Versioning: which build takes new turns (see README, Deployment).",
    no_args_is_help=True,
)
app.add_typer(deploy_app, name="deploy")
Deployment = Annotated[
    str | None,
    typer.Option(
        "--deployment",
        help="Worker Deployment name (default: TURNKEEPER_DEPLOYMENT_NAME)",
        show_default=False,
    ),
]


@deploy_app.command("status")
def deploy_status(
    deployment: Deployment = None,
    address: Address = None,
    namespace: Namespace = None,
    as_json: Json = False,
) -> None:
    """The current and ramping versions, and each version's state (draining, drained, …)."""
    name = _deployment(deployment)
    _execute(deploy_command.show_status(address, namespace, name, as_json))


@deploy_app.command("promote")
def deploy_promote(
    build_id: Annotated[str, typer.Argument(help="Build id that takes every new turn")],
    deployment: Deployment = None,
    address: Address = None,
    namespace: Namespace = None,
) -> None:
    """Make a version current; turns already running stay pinned to their version."""
    name = _deployment(deployment)
    _execute(deploy_command.promote(address, namespace, name, build_id))


@deploy_app.command("ramp")
def deploy_ramp(
    percent: Annotated[float, typer.Argument(help="Share of new turns, 0-100 (0 ends the ramp)")],
    build_id: Annotated[
        str | None, typer.Option(help="Version to ramp (not needed for 0)", show_default=False)
    ] = None,
    deployment: Deployment = None,
    address: Address = None,
    namespace: Namespace = None,
) -> None:
    """Send a share of new turns to a version; the rest go to the current one."""
    name = _deployment(deployment)
    _execute(deploy_command.ramp(address, namespace, name, build_id, percent))


@deploy_app.command("rollback")
def deploy_rollback(
    build_id: Annotated[
        str | None,
        typer.Option(help="Version to go back to (default: the one just replaced)"),
    ] = None,
    deployment: Deployment = None,
    address: Address = None,
    namespace: Namespace = None,
) -> None:
    """Make the previous version current again; new turns go back to it."""
    name = _deployment(deployment)
    _execute(deploy_command.rollback(address, namespace, name, build_id))


def _deployment(given: str | None) -> str:
    try:
        return deploy_command.deployment_name(given)
    except CommandError as error:
        err.print(Text(f"error: {error.message}", style="red"), soft_wrap=True)
        raise typer.Exit(error.exit_code) from None


@app.command("codec-server")
def codec_server(
    port: Annotated[int, typer.Option(help="Port to listen on")] = DEFAULT_CODEC_PORT,
    host: Annotated[
        str, typer.Option(help=f"Address to listen on (beyond loopback needs {CODEC_TOKEN_ENV})")
    ] = DEFAULT_CODEC_HOST,
    ui_origin: Annotated[
        list[str] | None,
        typer.Option(
            help=f"Web UI origin allowed to call from a browser (default {DEFAULT_UI_ORIGIN})"
        ),
    ] = None,
    namespace: Annotated[
        list[str] | None,
        typer.Option(help="Namespace served (default: TEMPORAL_NAMESPACE or default)"),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="A name clients reach this server by, besides localhost, 127.0.0.1, ::1 and "
            "--host; other Host headers are refused (with a token: once one is given)"
        ),
    ] = None,
) -> None:
    """Decrypt payloads and resolve stored ones for the Web UI and the temporal CLI."""
    from turnkeeper.console import codec_command  # the codec server's modules: see `demo`

    namespaces = namespace or [os.environ.get("TEMPORAL_NAMESPACE") or "default"]
    _execute(
        codec_command.serve_codec(
            host=host,
            port=port,
            ui_origins=ui_origin or [DEFAULT_UI_ORIGIN],
            namespaces=namespaces,
            allowed_hosts=allowed_host or [],
        )
    )


@app.command()
def replay(
    workflow_id: Annotated[
        list[str] | None,
        typer.Option("--workflow-id", help="Workflow to replay (repeatable)", show_default=False),
    ] = None,
    query: Annotated[
        str | None,
        typer.Option(help="Visibility query, e.g. 'WorkflowType = \"AgentTurnWorkflow\"'"),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="At most this many histories of --query")
    ] = None,
    address: Address = None,
    namespace: Namespace = None,
) -> None:
    """Replay real histories against this installation's workflow code (the gate before a
    deploy); exits 1 if any diverges."""
    connection = commands.Connection(address, namespace, DEFAULT_UI_URL)
    _execute(replay_command.replay(connection, workflow_id or [], query, limit))


policy_app = typer.Typer(
    help="Cedar policies for tool calls (TURNKEEPER_POLICY_FILE).", no_args_is_help=True
)
app.add_typer(policy_app, name="policy")
PolicyFiles = Annotated[
    list[Path], typer.Argument(metavar="FILE…", help="Cedar policy files", show_default=False)
]


@policy_app.command("check")
def policy_check(files: PolicyFiles) -> None:
    """Check policy files: syntax, annotations and our entities' schema, with each error's
    line; exits 1 if any has an error."""
    raise typer.Exit(policy_command.check(files))


@policy_app.command("test")
def policy_test(
    files: PolicyFiles,
    workflow_id: Annotated[
        list[str] | None,
        typer.Option(
            "--workflow-id", help="Finished turn to test (repeatable)", show_default=False
        ),
    ] = None,
    query: Annotated[
        str | None,
        typer.Option(help="Visibility query, e.g. 'AgentId = \"support\"'"),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="At most this many turns of --query")
    ] = None,
    address: Address = None,
    namespace: Namespace = None,
) -> None:
    """What the policy files would have done to the tool calls of finished turns; exits 1 when
    any call's effect would change."""
    connection = commands.Connection(address, namespace, DEFAULT_UI_URL)
    _execute(policy_command.test(connection, files, workflow_id or [], query, limit))


@app.command()
def fork(
    workflow_id: WorkflowId,
    at_iteration: Annotated[
        int,
        typer.Option(min=1, help="Fork before this iteration's model call (1 = from the start)"),
    ],
    model: Annotated[str | None, _flag("The fork's model, provider:model")] = None,
    system_prompt: Annotated[str | None, _flag("The fork's system prompt")] = None,
    new_id: Annotated[
        str | None,
        typer.Option(
            "--id", help="The fork's workflow id (default: ID/fork-N)", show_default=False
        ),
    ] = None,
    address: Address = None,
    namespace: Namespace = None,
) -> None:
    """Start a new turn from a turn's conversation as it stood before iteration N, with the
    same request and the given fields changed; prints the new workflow id."""
    connection = commands.Connection(address, namespace, DEFAULT_UI_URL)
    changes = ForkChanges(model=model, system_prompt=system_prompt)
    _execute(fork_command.fork(connection, workflow_id, at_iteration, changes, new_id))


def _execute(command: Coroutine[Any, Any, int]) -> None:
    """Run one command's coroutine; turn the errors a user can act on into a line and a code."""
    try:
        code = asyncio.run(command)
    except RequestError as error:
        err.print(Text(f"error: invalid request: {error}", style="red"), soft_wrap=True)
        raise typer.Exit(2) from None
    except InvalidTurnRequest as error:  # refused at the start: an id the runtime keeps
        err.print(Text(f"error: {error.message}", style="red"), soft_wrap=True)
        raise typer.Exit(2) from None
    except CommandError as error:
        err.print(Text(f"error: {error.message}", style="red"), soft_wrap=True)
        raise typer.Exit(error.exit_code) from None
    except (
        TurnUnavailable,
        TemporalUnreachableError,
        DevServerError,
        SettingsError,
        StoreLocationError,
        EncryptionKeyError,
        UnreadableContentError,
        CodecServerError,
    ) as error:
        err.print(Text(f"error: {error}", style="red"), soft_wrap=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    raise typer.Exit(code)


app.add_typer(schedule_command.schedule_app(_execute), name="schedule")
