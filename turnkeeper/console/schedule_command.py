"""`turnkeeper schedule create|list|show|pause|resume|trigger|delete`: turns on a clock, over
Temporal Schedules (docs/schedules.md).

`schedule_app(execute)` builds the command group around the console's own runner (`cli.py`'s,
which turns the errors a user can act on into a line and an exit code)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Coroutine, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from temporalio.client import Client

from turnkeeper.client.connection import connect
from turnkeeper.client.requests import RunOptions, build_request
from turnkeeper.client.schedules import (
    ScheduleNotFound,
    ScheduleTaken,
    TurnSchedule,
    list_schedules,
    schedule_turn,
)
from turnkeeper.console.http_commands import TemporalAddress, TemporalNamespace
from turnkeeper.console.terminal import CommandError, out
from turnkeeper.contracts.names import DEFAULT_TASK_QUEUE, TASK_QUEUE_ENV
from turnkeeper.contracts.schedules import DEFAULT_OVERLAP, OVERLAPS, InvalidSchedule, ScheduleView

Execute = Callable[[Coroutine[Any, Any, int]], None]
Name = Annotated[str, typer.Argument(metavar="NAME", help="The schedule's name")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of text")]
TaskQueue = Annotated[
    str, typer.Option("--task-queue", envvar=TASK_QUEUE_ENV, help="Task queue of the workers")
]


def schedule_app(execute: Execute) -> typer.Typer:
    """The `schedule` command group; `execute` runs one command's coroutine."""
    app = typer.Typer(
        help="Turns on a clock: Temporal Schedules whose runs are turns (docs/schedules.md).",
        no_args_is_help=True,
    )

    @app.command("create")
    def create(
        name: Name,
        agent: Annotated[Path, typer.Option(help="Agent definition file (JSON)")],
        task: Annotated[str, typer.Option(help="The task each run is given")],
        cron: Annotated[
            str | None, typer.Option(help="Cron expression, UTC ('0 9 * * MON', '@daily')")
        ] = None,
        every: Annotated[str | None, typer.Option(help="Interval: 30s, 15m, 1h30m, 7d, 2w")] = None,
        tenant: Annotated[str | None, typer.Option(help="Tenant every run is billed to")] = None,
        overlap: Annotated[
            str,
            typer.Option(help=f"A tick while a run goes on: {' | '.join(OVERLAPS)}"),
        ] = DEFAULT_OVERLAP,
        paused: Annotated[bool, typer.Option("--paused", help="Create it paused")] = False,
        task_id: Annotated[
            str | None, typer.Option(help="Task id of every run (default: NAME)")
        ] = None,
        as_json: Json = False,
        address: TemporalAddress = None,
        namespace: TemporalNamespace = None,
        task_queue: TaskQueue = DEFAULT_TASK_QUEUE,
    ) -> None:
        """Create a schedule whose every tick starts a turn of the agent on the task."""
        options = RunOptions(input=task, agent_file=agent, task_id=task_id or name, tenant=tenant)

        async def creating(client: Client) -> ScheduleView:
            request = build_request(options, short_id=name)  # before anything is created
            schedule = await schedule_turn(
                client,
                name,
                request,
                cron=cron,
                every=every,
                overlap=overlap,
                paused=paused,
                task_queue=task_queue,
            )
            return await schedule.describe()

        execute(_show(address, namespace, creating, as_json, created=True))

    @app.command("list")
    def list_command(
        as_json: Json = False,
        address: TemporalAddress = None,
        namespace: TemporalNamespace = None,
    ) -> None:
        """Every schedule of turns: its clock, state, next run and how many runs it started."""
        execute(_list(address, namespace, as_json))

    @app.command("show")
    def show(
        name: Name,
        as_json: Json = False,
        address: TemporalAddress = None,
        namespace: TemporalNamespace = None,
    ) -> None:
        """One schedule: what it starts, its clock, its latest and next runs."""

        async def reading(client: Client) -> ScheduleView:
            return await TurnSchedule(client, name).describe()

        execute(_show(address, namespace, reading, as_json))

    def action(verb: str, summary: str, done: str) -> None:
        def command(
            name: Name, address: TemporalAddress = None, namespace: TemporalNamespace = None
        ) -> None:
            async def acting(client: Client) -> str:
                await getattr(TurnSchedule(client, name), verb)()
                return done.format(name=name)

            execute(_say(address, namespace, acting))

        command.__doc__ = summary
        app.command(verb)(command)

    action("pause", "Stop the clock: no tick starts a run until resume.", "paused {name!r}")
    action("resume", "Start the clock again.", "resumed {name!r}")
    action(
        "trigger",
        "Start one run now, as a tick would.",
        "triggered {name!r}: its run is a turn at schedule:{name}-<time> (schedule show)",
    )
    action("delete", "Delete the schedule; runs already started go on.", "deleted {name!r}")
    return app


async def _client(address: str | None, namespace: str | None) -> Client:
    return await connect(address=address, namespace=namespace)


async def _show(
    address: str | None,
    namespace: str | None,
    read: Callable[[Client], Coroutine[Any, Any, ScheduleView]],
    as_json: bool,
    created: bool = False,
) -> int:
    with _refusals():
        view = await read(await _client(address, namespace))
    if as_json:
        out.out(json.dumps(view.model_dump(mode="json")), highlight=False)
        return 0
    if created:
        out.print(f"created schedule {view.name!r}", soft_wrap=True)
    _describe(view)
    return 0


async def _list(address: str | None, namespace: str | None, as_json: bool) -> int:
    views = await list_schedules(await _client(address, namespace))
    if as_json:
        out.out(json.dumps([v.model_dump(mode="json") for v in views]), highlight=False)
    elif not views:
        out.print("No schedules of turns.")
    else:
        table = Table("name", "agent", "clock", "overlap", "state", "next run", "runs", "owner")
        for v in views:
            table.add_row(
                v.name,
                v.request.agent.id,
                _clock(v),
                v.overlap,
                "paused" if v.paused else "active",
                _when(v.next_runs[0]) if v.next_runs else "-",
                str(v.runs),
                v.started_by or "-",
            )
        out.print(table)
    return 0


async def _say(
    address: str | None, namespace: str | None, act: Callable[[Client], Coroutine[Any, Any, str]]
) -> int:
    with _refusals():
        out.print(await act(await _client(address, namespace)), soft_wrap=True)
    return 0


@contextlib.contextmanager
def _refusals() -> Iterator[None]:
    """The library's refusals as the console's errors: a bad input exits 2, the rest 1."""
    try:
        yield
    except InvalidSchedule as error:
        raise CommandError(str(error), exit_code=2) from None
    except (ScheduleNotFound, ScheduleTaken) as error:
        raise CommandError(str(error)) from None


def _describe(view: ScheduleView) -> None:
    request = view.request
    lines = [
        f"schedule   {view.name} ({'paused' if view.paused else 'active'}"
        + (f": {view.note}" if view.note else "")
        + ")",
        f"clock      {_clock(view)} (overlap: {view.overlap})",
        f"agent      {request.agent.id} on task {request.task.id!r}: {request.task.input}",
        f"tenant     {request.tenant or '-'}",
        f"queue      {view.task_queue}",
        f"owner      {view.started_by or '-'}",
        f"runs       {view.runs} started"
        + (f", running: {', '.join(view.running)}" if view.running else ""),
    ]
    lines += [
        f"  ran      {run.workflow_id} at {_when(run.started_at)}" for run in view.recent_runs
    ]
    lines += [f"next       {_when(moment)}" for moment in view.next_runs[:3]]
    for line in lines:
        out.print(line, soft_wrap=True, highlight=False)


def _clock(view: ScheduleView) -> str:
    if view.cron is not None:
        return f"cron {view.cron}"
    return f"every {view.every}" if view.every else "edited outside turnkeeper"


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
