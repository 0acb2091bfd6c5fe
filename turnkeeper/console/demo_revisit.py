"""What the demo prints last: how to come back to its run once the demo has ended.

The demo's dev server, Web UI and worker stop with it. A turn's `status` and `transcript` are
queries, which a worker polling the turn's task queue answers even for a closed workflow (it
replays the history); without one they fail ("no poller seen for task queue"). The demo therefore
runs on the task queue `python worker.py` polls, and the way back is `python worker.py --dev` on
the demo's data folder and ports: the same server with its Web UI, and a worker that answers.
Every command is written as it runs from the demo's folder (`turnkeeper.console.programs`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rich.console import Console
from rich.text import Text

from turnkeeper.console.programs import python_program
from turnkeeper.console.target import Target, shell
from turnkeeper.devtools.devserver import DEFAULT_PORT, DevServer
from turnkeeper.payloads.stores import DATA_DIR_ENV, STORE_DIR_ENV
from turnkeeper.worker.settings import Settings

# `python worker.py` of the checkout this package is installed from (editable); an installed
# package has no such file and runs the same command line as a module.
CHECKOUT_WORKER: Final = Path(__file__).resolve().parents[2] / "worker.py"
WORKER_MODULE: Final = "turnkeeper.console.worker_cli"


@dataclass(frozen=True)
class Revisit:
    """The commands that bring the demo's run back, each ready to copy."""

    worker: str
    status: str
    transcript: str
    web_ui: str


def environment_for(settings: Settings) -> tuple[tuple[str, str], ...]:
    """The variables a later command needs to find the demo's files (its `--data-dir`): those
    whose value the environment alone would not give."""
    chosen: dict[str, str] = {}
    if _later(chosen).data_dir != settings.data_dir:
        chosen[DATA_DIR_ENV] = str(settings.data_dir)
    if _later(chosen).store_dir != settings.store_dir:
        chosen[STORE_DIR_ENV] = str(settings.store_dir)
    return tuple(chosen.items())


def _later(variables: dict[str, str]) -> Settings:
    """The settings of a later command from this folder that sets `variables` first."""
    return Settings.from_env({**os.environ, **variables})


def revisit(workflow_id: str, target: Target, server: DevServer, settings: Settings) -> Revisit:
    return Revisit(
        worker=_worker_command(target, server, settings),
        status=target.ours("status", workflow_id),
        transcript=target.ours("transcript", workflow_id),
        web_ui=target.workflow_url(workflow_id),
    )


def show(console: Console, commands: Revisit, server: DevServer) -> None:
    if server.reused:
        intro = (
            f"The Temporal server on {server.address} keeps running. To come back to this run "
            "from this folder, start a worker that answers for it:"
        )
    else:
        intro = (
            "The dev server and its Web UI stopped with the demo. To come back to this run from "
            "this folder, bring them back with a worker that answers for it:"
        )
    console.print(Text(intro), soft_wrap=True)
    console.print(Text(f"    {commands.worker}", style="cyan"), soft_wrap=True)
    console.print(Text("  then, from another terminal:"))
    for line in (commands.status, commands.transcript, commands.web_ui):
        console.print(Text(f"    {line}", style="cyan"), soft_wrap=True)


def _worker_command(target: Target, server: DevServer, settings: Settings) -> str:
    words = [python_program(), *_worker_script(), "--dev"]
    if server.port != DEFAULT_PORT:
        words += ["--dev-port", str(server.port)]
    if server.ui_port != server.port + 1000:
        words += ["--ui-port", str(server.ui_port)]
    if settings.task_queue != _later(dict(target.environment)).task_queue:
        words += ["--task-queue", settings.task_queue]
    return shell(words, target.environment)


def _worker_script() -> list[str]:
    here = Path("worker.py")
    if here.is_file() and here.resolve() == CHECKOUT_WORKER:
        return ["worker.py"]
    return ["-m", WORKER_MODULE]
