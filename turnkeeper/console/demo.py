"""`turnkeeper demo`: the whole runtime on a fresh machine, with no Docker and no API key.

It starts the embedded Temporal dev server, runs a worker in this process, seeds a workspace with
a few notes and starts a turn on the offline demo model, which lists the notes, reads them in
parallel and asks to write `summary.md`. That write waits for a human: the demo asks at the
terminal and shows the other ways to decide (our command, the `temporal` CLI, the Web UI).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from rich.panel import Panel
from rich.text import Text
from temporalio.client import Client, WorkflowHandle

from turnkeeper.client.client import TurnHandle
from turnkeeper.client.connection import connect
from turnkeeper.client.errors import DecisionRefused
from turnkeeper.client.requests import validate_request
from turnkeeper.client.turns import (
    follow,
    read_status,
    short_id,
    start_turn_workflow,
    turn_workflow_id,
)
from turnkeeper.console import demo_revisit, render
from turnkeeper.console.commands import show_outcome
from turnkeeper.console.target import Target
from turnkeeper.console.terminal import CommandError, logging_to_file, out
from turnkeeper.contracts.names import DEFAULT_TASK_QUEUE
from turnkeeper.contracts.signals import PendingCall
from turnkeeper.contracts.turn import AgentReport
from turnkeeper.devtools.dev_stack import dev_stack
from turnkeeper.devtools.devserver import DevServer, PortFlags
from turnkeeper.payloads.content_store import ContentStore
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.stores import open_store
from turnkeeper.worker.run import run_turn_worker
from turnkeeper.worker.settings import Settings

DEMO_AGENT_ID: Final = "demo-summarizer"
DEMO_MODEL: Final = "demo:workspace-summarizer"
DEMO_TASK: Final = "Summarise the notes in the workspace and save the summary to summary.md"
LOG_FILENAME: Final = "turnkeeper-demo.log"

SAMPLE_NOTES: Final[dict[str, str]] = {
    "meeting-notes.md": "# Weekly sync: ship the approval flow on Friday\n\n"
    "- Alice demos the Web UI\n- Bob reviews the retry policy\n",
    "ideas.md": "# Ideas: let agents remember standing approvals\n\n"
    "Approving the same tool for the same agent every time gets old.\n",
    "reading-list.md": "# Reading list: durable execution papers\n\n"
    "1. Sagas (1987)\n2. Temporal's event history design notes\n",
}

Answer = Literal["yes", "no"]


@dataclass(frozen=True)
class DemoOptions:
    """`--yes`/`--no` as `answer` (None: ask), and where the demo keeps its files."""

    answer: Answer | None
    workspace: Path | None
    data_dir: Path | None
    port: int
    ui_port: int
    # The queue `python worker.py` polls, so that its worker answers for the run later.
    task_queue: str = DEFAULT_TASK_QUEUE


async def run_demo(options: DemoOptions) -> int:
    """Dev server, worker, one turn to its report; every process it started is stopped again."""
    settings = _settings(options)
    log_path = settings.data_dir / LOG_FILENAME
    with logging_to_file(log_path):
        _step(f"diagnostics go to {log_path}")
        _show_workspace(settings.workspace, seed_workspace(settings.workspace))
        keyring = Keyring.from_env()
        store = open_store(settings, keyring)
        async with _dev_server(settings, options, store, keyring) as server:
            client = await connect(
                address=server.address,
                namespace=server.namespace,
                from_env=False,
                store=store,
                keyring=keyring,
            )
            # The printed commands find the demo's files (`--data-dir`) after it ended, too.
            files = demo_revisit.environment_for(settings)
            target = Target(server.address, server.namespace, server.ui_url, environment=files)
            workflow_id = turn_workflow_id(DEMO_AGENT_ID, short_id())
            async with _worker(settings, client) as worker:
                code = await _demo_turn(
                    client, target, settings, workflow_id, options.answer, worker
                )
        demo_revisit.show(out, demo_revisit.revisit(workflow_id, target, server, settings), server)
        return code


@asynccontextmanager
async def _dev_server(
    settings: Settings, options: DemoOptions, store: ContentStore, keyring: Keyring
) -> AsyncIterator[DevServer]:
    _step("starting Temporal dev server…")
    servers = dev_stack(
        settings.data_dir,
        store,
        keyring,
        port=options.port,
        ui_port=options.ui_port,
        port_flags=PortFlags("--port", "--ui-port"),
    )
    async with servers as server:
        how = "reused the one already running" if server.reused else "started"
        _done(f"Temporal dev server {how} on {server.address} · Web UI {server.ui_url}")
        if server.ui_codec_endpoint:
            _done(f"codec server for the Web UI on {server.ui_codec_endpoint}")
        try:
            yield server
        finally:
            if not server.reused:
                _step("stopping the Temporal dev server…")


def _settings(options: DemoOptions) -> Settings:
    settings = Settings.from_env()
    data_dir = options.data_dir.resolve() if options.data_dir else settings.data_dir
    return dataclasses.replace(
        settings,
        task_queue=options.task_queue,
        workspace=options.workspace.resolve() if options.workspace else settings.workspace,
        data_dir=data_dir,
        store_dir=data_dir / "store" if options.data_dir else settings.store_dir,
    )


def seed_workspace(workspace: Path) -> list[str]:
    """Write the sample notes when the workspace has no files yet; the names written."""
    workspace.mkdir(parents=True, exist_ok=True)
    if any(path.is_file() for path in workspace.iterdir()):
        return []
    for name, text in SAMPLE_NOTES.items():
        (workspace / name).write_text(text, encoding="utf-8")
    return list(SAMPLE_NOTES)


@asynccontextmanager
async def _worker(settings: Settings, client: Client) -> AsyncIterator[asyncio.Task[None]]:
    stop = asyncio.Event()
    task = asyncio.create_task(run_turn_worker(settings, client, stop=stop))
    _done(f"worker running on task queue {settings.task_queue!r}")
    try:
        yield task
    finally:
        _step("stopping the worker…")
        stop.set()
        # The worker's own failure was already reported by `_demo_turn`.
        await asyncio.gather(task, return_exceptions=True)


async def _demo_turn(
    client: Client,
    target: Target,
    settings: Settings,
    workflow_id: str,
    answer: Answer | None,
    worker: asyncio.Task[None],
) -> int:
    request = validate_request(
        {
            "agent": {"id": DEMO_AGENT_ID, "model": DEMO_MODEL},
            "task": {"id": f"demo-{short_id()}", "input": DEMO_TASK},
        }
    )
    handle = await start_turn_workflow(
        client, request, workflow_id=workflow_id, task_queue=settings.task_queue
    )
    _done(f"turn started on {DEMO_MODEL}: {DEMO_TASK}")
    render.started(out, workflow_id, target)

    async def decide(calls: list[PendingCall]) -> None:
        for call in calls:
            await _decide_at_terminal(client, handle, call, target, answer)

    following = asyncio.create_task(follow(handle, decide, poll_s=0.25))
    await asyncio.wait({following, worker}, return_when=asyncio.FIRST_COMPLETED)
    if not following.done():
        following.cancel()
        raise CommandError(f"The worker stopped before the turn ended: {_why(worker)}")
    return show_outcome(following.result(), target, as_json=False)


def _why(worker: asyncio.Task[None]) -> str:
    error = worker.exception() if not worker.cancelled() else None
    return str(error) if error else "it exited"


async def _decide_at_terminal(
    client: Client,
    handle: WorkflowHandle[Any, AgentReport],
    call: PendingCall,
    target: Target,
    answer: Answer | None,
) -> None:
    """Show what the call wants to do and the other ways to decide it, then ask."""
    show_call(call)
    out.print(Text("Other ways to decide it:", style="dim"))
    for command in render.decide_commands(handle.id, call, target):
        out.print(Text(f"  {command}", style="cyan"), soft_wrap=True)
    out.print(Text(f"  Web UI: {target.workflow_url(handle.id)}", style="cyan"), soft_wrap=True)
    if call.kind != "approval":
        return  # the demo model has no external tools; `turnkeeper submit` would answer it
    approved, reason = await ask(answer)
    if call.call_id not in {c.call_id for c in (await read_status(handle)).pending}:
        out.print(Text("The call was decided elsewhere meanwhile.", style="yellow"))
        return
    if await send_decision(TurnHandle(client, handle), call.call_id, approved, reason):
        _done("approved" if approved else f"rejected: {reason}")


async def send_decision(turn: TurnHandle, call_id: str, approved: bool, reason: str) -> bool:
    """The decision made at the prompt, as the person at it, through the handle; False when the
    turn refused it (the refusal is shown)."""
    try:
        if approved:
            await turn.approve(call_id, approver=render.local_user(), reason=reason)
        else:
            await turn.reject(call_id, reason=reason, approver=render.local_user())
    except DecisionRefused as refusal:
        out.print(Text(f"decision refused: {refusal}", style="red"), soft_wrap=True)
        return False
    return True


def show_call(call: PendingCall) -> None:
    body = Text()
    for key, value in call.input.items():
        if isinstance(value, str) and "\n" in value:
            body.append(f"{key}:\n", style="dim")
            body.append(value.rstrip("\n") + "\n")
        else:
            body.append(f"{key}: ", style="dim")
            body.append(f"{value}\n")
    title = f"{call.tool} waits for your approval (call {call.call_id})"
    out.print(Panel(body, title=title, title_align="left", border_style="yellow"))


async def ask(answer: Answer | None) -> tuple[bool, str]:
    """(approved, reason): from `--yes`/`--no`, else a line from stdin (a terminal or a pipe)."""
    if answer is not None:
        out.print(Text(f"Approve? [y/N] {answer[0]} (--{answer})"))
        return answer == "yes", "" if answer == "yes" else "rejected with --no"
    reply = await _read_line("Approve? [y/N] ")
    if reply.lower() in ("y", "yes"):
        return True, ""
    reason = await _read_line("Reason for rejecting (optional): ")
    return False, reason or "rejected at the terminal"


async def _read_line(prompt: str) -> str:
    return (await read_line(prompt)) or ""


async def read_line(prompt: str) -> str | None:
    """One line of stdin without blocking the event loop, where the worker runs; None at the
    end of input.

    A daemon thread rather than `asyncio.to_thread`: on Ctrl-C the executor's shutdown would
    wait for a thread still blocked in `readline`.
    """
    out.print(Text(prompt), end="")
    loop = asyncio.get_running_loop()
    reply: asyncio.Future[str] = loop.create_future()

    def deliver(line: str) -> None:
        if not reply.done():
            reply.set_result(line)

    def read() -> None:
        line = sys.stdin.readline()
        loop.call_soon_threadsafe(deliver, line)

    threading.Thread(target=read, name="demo-stdin", daemon=True).start()
    try:
        raw = await reply
    except asyncio.CancelledError:
        out.print()  # Ctrl-C at the prompt: what follows starts on a line of its own
        raise
    line = raw.strip()
    if not sys.stdin.isatty():
        out.print(Text(line or "(no answer)", style="dim"))  # what a terminal would have echoed
    return line if raw else None


def _show_workspace(workspace: Path, seeded: list[str]) -> None:
    if seeded:
        _done(f"seeded {workspace} with {len(seeded)} sample notes: {', '.join(seeded)}")
    else:
        _done(f"workspace {workspace} (kept its files)")


def _step(message: str) -> None:
    out.print(Text(f"• {message}", style="dim"), soft_wrap=True)


def _done(message: str) -> None:
    out.print(Text.assemble(("✓ ", "green"), message), soft_wrap=True)
