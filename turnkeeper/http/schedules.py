"""`/v1/schedules`: turns on a clock over the HTTP API (docs/schedules.md), owned like turns.

The token's identity owns the schedules it creates (their `StartedBy`, and every run's); an
operator sees and changes every schedule of turns, a member its own only: anyone else's is the
same 404 as a missing one. A member's schedule is billed to its tenant, as its turns are
(`billed_request`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Path, Request, Response
from pydantic import Field
from temporalio.client import Client

from turnkeeper.client.errors import InvalidTurnRequest
from turnkeeper.client.schedules import (
    ScheduleNotFound,
    ScheduleTaken,
    TurnSchedule,
    list_schedules,
    schedule_turn,
)
from turnkeeper.contracts.schedules import (
    DEFAULT_OVERLAP,
    SCHEDULE_NAME_PATTERN,
    InvalidSchedule,
    Overlap,
    ScheduleView,
)
from turnkeeper.http.access import billed_request
from turnkeeper.http.caller_request import CallerRequest
from turnkeeper.http.errors import ApiError
from turnkeeper.http.tokens import Identity

ScheduleName = Annotated[str, Path(pattern=SCHEDULE_NAME_PATTERN)]


class ScheduleBody(CallerRequest):
    """`POST /v1/schedules`: the turn each run starts (a `TurnRequest`) and its clock."""

    name: str = Field(pattern=SCHEDULE_NAME_PATTERN)
    """The schedule's name (its Temporal schedule id): a letter or digit, then letters, digits
    and `. _ -`, at most 150 characters."""
    cron: str | None = None
    """A cron expression, UTC (`0 9 * * MON`, `@daily`); this or `every`."""
    every: str | None = None
    """An interval (`30s`, `15m`, `1h30m`, `7d`, `2w`); this or `cron`."""
    overlap: Overlap = DEFAULT_OVERLAP
    """What a tick does while a run is still going: `skip`, `buffer` (one run waits) or
    `allow`."""
    paused: bool = False
    """Create it paused."""


def no_schedule(name: str) -> ApiError:
    """The answer for a missing schedule and for one the caller may not see, alike."""
    return ApiError(404, f"no schedule {name!r}")


async def visible_schedule(client: Client, name: str, identity: Identity) -> TurnSchedule:
    """The schedule, when `identity` may see it (its owner, or an operator).

    Raises:
        ApiError: 404 for a missing schedule and for someone else's, alike.
    """
    schedule = TurnSchedule(client, name)
    try:
        view = await schedule.describe()
    except ScheduleNotFound:
        raise no_schedule(name) from None
    if not identity.is_operator and view.started_by != identity.name:
        raise no_schedule(name)
    return schedule


def add_schedules(app: FastAPI, turns: object) -> None:
    """The `/v1/schedules` routes over the Temporal client of `turns` (a `TurnService`; sign-in
    and the audit line are the app's)."""

    def caller(http: Request, name: str | None = None) -> Identity:
        http.state.schedule = name  # the audit line names it
        identity: Identity = http.state.identity
        return identity

    def temporal() -> Client:
        client = getattr(turns, "client", None)
        if not isinstance(client, Client):  # a fake of the turn operations has no Temporal
            raise ApiError(503, "this server has no Temporal client for schedules")
        return client

    @app.post("/v1/schedules", status_code=201)
    async def create(body: ScheduleBody, http: Request) -> ScheduleView:
        """Create a schedule of turns, owned by the caller; a member's runs are billed to its
        tenant."""
        identity = caller(http, body.name)
        request = billed_request(body.turn_request(), identity)
        try:
            schedule = await schedule_turn(
                temporal(),
                body.name,
                request,
                cron=body.cron,
                every=body.every,
                overlap=body.overlap,
                paused=body.paused,
                started_by=identity.name,
            )
        except (InvalidSchedule, InvalidTurnRequest) as error:
            raise ApiError(422, str(error)) from None
        except ScheduleTaken as error:
            raise ApiError(409, str(error)) from None
        return await schedule.describe()

    @app.get("/v1/schedules")
    async def listing(http: Request) -> list[ScheduleView]:
        """The schedules of turns the caller may see (an operator: every one), by name."""
        identity = caller(http)
        owner = None if identity.is_operator else identity.name
        return await list_schedules(temporal(), started_by=owner)

    @app.get("/v1/schedules/{schedule}")
    async def show(schedule: ScheduleName, http: Request) -> ScheduleView:
        """The schedule: what it starts, its clock, its latest and next runs."""
        found = await visible_schedule(temporal(), schedule, caller(http, schedule))
        return await found.describe()

    @app.delete("/v1/schedules/{schedule}", status_code=204)
    async def delete(schedule: ScheduleName, http: Request) -> Response:
        """Delete the schedule; runs already started go on."""
        found = await visible_schedule(temporal(), schedule, caller(http, schedule))
        await found.delete()
        return Response(status_code=204)

    @app.post("/v1/schedules/{schedule}/pause")
    async def pause(schedule: ScheduleName, http: Request) -> ScheduleView:
        """Stop the clock: no tick starts a run until `resume` (`trigger` still does)."""
        found = await visible_schedule(temporal(), schedule, caller(http, schedule))
        await found.pause(f"paused by {http.state.identity.name}")
        return await found.describe()

    @app.post("/v1/schedules/{schedule}/resume")
    async def resume(schedule: ScheduleName, http: Request) -> ScheduleView:
        """Start the clock again."""
        found = await visible_schedule(temporal(), schedule, caller(http, schedule))
        await found.resume(f"resumed by {http.state.identity.name}")
        return await found.describe()

    @app.post("/v1/schedules/{schedule}/trigger", status_code=202)
    async def trigger(schedule: ScheduleName, http: Request) -> dict[str, str]:
        """Start one run now, as a tick would; it shows in `recent_runs` once started."""
        found = await visible_schedule(temporal(), schedule, caller(http, schedule))
        await found.trigger()
        return {"name": schedule}
