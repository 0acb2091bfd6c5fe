"""The command line of `turnkeeper eval DATASET …`, `turnkeeper eval show RUN_ID` and
`turnkeeper eval compare A B` (`eval_command.py` does the work)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from typer.core import TyperGroup

from turnkeeper.console.commands import Connection
from turnkeeper.console.target import DEFAULT_UI_URL
from turnkeeper.contracts.names import DEFAULT_TASK_QUEUE, TASK_QUEUE_ENV

_RUN = "run"


class Approvals(StrEnum):
    """`--approvals`: see `contracts/evals.ApprovalMode`."""

    REJECT = "reject"
    APPROVE = "approve"
    POLICY = "policy"


class _RunByDefault(TyperGroup):
    """`turnkeeper eval DATASET …` is `turnkeeper eval run DATASET …`: a first argument that
    names no subcommand is the dataset (a dataset file named `show` needs `eval run show`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = [_RUN, *args]
        return super().parse_args(ctx, args)


eval_app = typer.Typer(
    cls=_RunByDefault,
    no_args_is_help=True,
    help="Evaluate an agent on a pydantic-evals dataset: every case a durable turn, scored.",
)

Address = Annotated[
    str | None,
    typer.Option(help="Temporal host:port (default: TEMPORAL_ADDRESS, profile, localhost:7233)"),
]
Namespace = Annotated[
    str | None, typer.Option(help="Temporal namespace (default: TEMPORAL_NAMESPACE, default)")
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables")]


def _execute(command: Any) -> None:
    # Imported here: cli.py imports this module, and its `_execute` maps every error we share.
    from turnkeeper.console.cli import _execute as execute

    execute(command)


def _commands() -> Any:
    """`eval_command`, imported when an eval command runs: it loads pydantic-evals, two seconds
    of CPU that every other command would otherwise pay at its start."""
    from turnkeeper.console import eval_command

    return eval_command


@eval_app.command(_RUN)
def run(
    dataset: Annotated[
        Path, typer.Argument(metavar="DATASET", help="pydantic-evals dataset file (YAML or JSON)")
    ],
    agent: Annotated[Path, typer.Option(help="Agent definition file (JSON)")],
    model: Annotated[
        list[str] | None, typer.Option(help="Model to run every case on (repeatable)")
    ] = None,
    repeat: Annotated[int, typer.Option(min=1, max=100, help="Runs of each case per model")] = 1,
    concurrency: Annotated[int, typer.Option(min=1, max=200, help="Most turns at once")] = 4,
    max_cost: Annotated[
        float | None,
        typer.Option("--max-cost", min=0, help="No case starts once the run spent this (USD)"),
    ] = None,
    run_id: Annotated[
        str | None, typer.Option("--id", help="Run id (default: eval-<dataset>-<random>)")
    ] = None,
    report: Annotated[
        Path | None, typer.Option(help="Write report.json, junit.xml and index.html here")
    ] = None,
    fail_under: Annotated[
        float | None,
        typer.Option(min=0, max=1, help="Exit 1 when the pass rate (0-1) is under this"),
    ] = None,
    approvals: Annotated[
        Approvals, typer.Option(help="Who decides calls that wait for approval")
    ] = Approvals.REJECT,
    tenant: Annotated[str | None, typer.Option(help="Tenant every case is billed to")] = None,
    address: Address = None,
    namespace: Namespace = None,
    task_queue: Annotated[
        str, typer.Option("--task-queue", envvar=TASK_QUEUE_ENV, help="Task queue of the worker")
    ] = DEFAULT_TASK_QUEUE,
) -> None:
    """Run every case × model × repetition as a turn and score it; prints cases as they end."""
    commands = _commands()
    options = commands.EvalOptions(
        dataset=dataset,
        agent=agent,
        models=model or [],
        repeat=repeat,
        concurrency=concurrency,
        max_cost_usd=max_cost or None,
        run_id=run_id,
        report=report,
        fail_under=fail_under,
        approvals=approvals.value,
        tenant=tenant,
        task_queue=task_queue,
    )
    connection = Connection(address, namespace, DEFAULT_UI_URL)
    _execute(commands.run_eval(connection, options))


@eval_app.command()
def show(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="The evaluation run's id")],
    cases: Annotated[bool, typer.Option("--cases", help="Also list every case run")] = False,
    as_json: Json = False,
    address: Address = None,
    namespace: Namespace = None,
) -> None:
    """Per model: pass rate, pass@k, mean score per scorer, cost, p50/p95 duration."""
    connection = Connection(address, namespace, DEFAULT_UI_URL)
    _execute(_commands().show(connection, run_id, cases, as_json))


@eval_app.command("compare")
def compare(
    run_a: Annotated[str, typer.Argument(metavar="A", help="The earlier run")],
    run_b: Annotated[str, typer.Argument(metavar="B", help="The later run")],
    as_json: Json = False,
    address: Address = None,
    namespace: Namespace = None,
) -> None:
    """Which cases got better or worse from A to B; cost and duration change."""
    connection = Connection(address, namespace, DEFAULT_UI_URL)
    _execute(_commands().compare_runs(connection, run_a, run_b, as_json))
