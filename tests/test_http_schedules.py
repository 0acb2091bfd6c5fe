"""`/v1/schedules` (turnkeeper/http/schedules.py): the app in-process over the dev server, a
worker in the test's process. The token's identity owns its schedules and their runs, a member's
runs are billed to its tenant, someone else's schedule is a 404 like a missing one, every bad
input is refused with nothing created, and every change has its audit line."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from turnkeeper.contracts.names import TASK_QUEUE_ENV

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from tests.unit.http.test_access import AuditRecords
from tests.unit.http.test_access import audited as audited
from turnkeeper.client.client import turn
from turnkeeper.client.schedules import ScheduleNotFound, turn_schedule
from turnkeeper.http.app import create_app
from turnkeeper.http.auth import FailedSignIns
from turnkeeper.http.tokens import TokenStore
from turnkeeper.http.turns import TurnService


class Api:
    def __init__(self, http: httpx.AsyncClient, tokens: dict[str, str]) -> None:
        self.http = http
        self.tokens = tokens

    def as_(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}


@pytest.fixture
async def api(
    turns: TurnRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Api]:
    monkeypatch.setenv(TASK_QUEUE_ENV, turns.task_queue)  # where the served schedules' runs go
    store = TokenStore(tmp_path / "tokens.json")
    tokens = {
        "mia": store.add("mia", tenant="acme"),
        "max": store.add("max", tenant="acme"),
        "olga": store.add("olga", role="operator"),
    }
    app = create_app(TurnService(turns.client), store, failures=FailedSignIns(limit=1000))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as http:
        yield Api(http, tokens)


def body(key: str, name: str, **fields: Any) -> dict[str, Any]:
    return {**scripted_request(key), "name": name, "cron": "0 9 * * MON", **fields}


async def test_a_members_schedule_is_its_own_and_its_runs_are_billed_to_its_tenant(
    api: Api, turns: TurnRunner, audited: AuditRecords
) -> None:
    key, name = new_key(), f"http-{new_key()}"
    turns.fake.script(key, [fake.text("Weekly digest.")])
    created = await api.http.post(
        "/v1/schedules", json=body(key, name, paused=True), headers=api.as_("mia")
    )
    assert created.status_code == 201, created.text
    view = created.json()
    assert (view["started_by"], view["request"]["tenant"], view["paused"]) == ("mia", "acme", True)

    for other in ("get", "delete"):  # another member of the same tenant: as if missing
        answer = await api.http.request(other, f"/v1/schedules/{name}", headers=api.as_("max"))
        assert answer.status_code == 404 and answer.json() == {"detail": f"no schedule {name!r}"}
    for verb in ("pause", "resume", "trigger"):
        answer = await api.http.post(f"/v1/schedules/{name}/{verb}", headers=api.as_("max"))
        assert answer.status_code == 404, verb
    assert (await turn_schedule(turns.client, name).describe()).paused  # max changed nothing
    listed = await until(
        lambda: api.http.get("/v1/schedules", headers=api.as_("olga")),
        lambda answer: name in [v["name"] for v in answer.json()],
        "the operator lists the schedule",
    )
    assert listed.status_code == 200
    theirs = await api.http.get("/v1/schedules", headers=api.as_("max"))
    assert name not in [v["name"] for v in theirs.json()]

    triggered = await api.http.post(f"/v1/schedules/{name}/trigger", headers=api.as_("mia"))
    assert triggered.status_code == 202
    shown = await until(
        lambda: api.http.get(f"/v1/schedules/{name}", headers=api.as_("mia")),
        lambda answer: answer.json()["recent_runs"] and not answer.json()["running"],
        "the triggered run ended",
    )
    run_id = shown.json()["recent_runs"][0]["workflow_id"]
    report = await turn(turns.client, run_id).result()
    assert (report.schedule, report.started_by, report.tenant) == (name, "mia", "acme")
    status = await api.http.get(f"/v1/turns/{run_id}", headers=api.as_("mia"))
    assert status.status_code == 200 and status.json()["schedule"] == name
    assert (await api.http.get(f"/v1/turns/{run_id}", headers=api.as_("max"))).status_code == 404

    resumed = await api.http.post(f"/v1/schedules/{name}/resume", headers=api.as_("mia"))
    assert resumed.status_code == 200 and resumed.json()["note"] == "resumed by mia"
    deleted = await api.http.delete(f"/v1/schedules/{name}", headers=api.as_("olga"))
    assert deleted.status_code == 204
    assert [line for line in audited.lines() if "schedule=" in line] == [
        f"api_call identity='mia' role='member' action='schedule_create' turn=None "
        f"tenant=None status=201 schedule='{name}'",
        *[
            f"api_call identity='max' role='member' action='{action}' turn=None tenant=None "
            f"status=404 schedule='{name}'"
            for action in ("schedule_delete", "schedule_pause", "schedule_resume")
        ],
        f"api_call identity='max' role='member' action='schedule_trigger' turn=None "
        f"tenant=None status=404 schedule='{name}'",
        f"api_call identity='mia' role='member' action='schedule_trigger' turn=None "
        f"tenant=None status=202 schedule='{name}'",
        f"api_call identity='mia' role='member' action='schedule_resume' turn=None "
        f"tenant=None status=200 schedule='{name}'",
        f"api_call identity='olga' role='operator' action='schedule_delete' turn=None "
        f"tenant=None status=204 schedule='{name}'",
    ]


BAD = [
    ({"cron": "every monday"}, 422, "--cron 'every monday': Invalid schedule spec"),
    ({"cron": None, "every": "a week"}, 422, "--every 'a week': not a duration"),
    ({"every": "1h"}, 422, "give one of --cron and --every"),
    ({"overlap": "queue"}, 422, "overlap"),
    ({"tenant": "globex"}, 403, "starts turns for its tenant 'acme' only"),
    ({"started_by": "olga"}, 422, "started_by is set by the runtime"),
    ({"agent": {"id": "a", "model": "demo:x", "max_iterations": 0}}, 422, "max_iterations"),
]


@pytest.mark.parametrize(("fields", "status", "says"), BAD)
async def test_a_bad_schedule_is_refused_and_nothing_is_created(
    api: Api, turns: TurnRunner, fields: dict[str, Any], status: int, says: str
) -> None:
    name = f"bad-{new_key()}"
    answer = await api.http.post(
        "/v1/schedules", json=body(new_key(), name, **fields), headers=api.as_("mia")
    )
    assert answer.status_code == status and says in answer.text, answer.text
    with pytest.raises(ScheduleNotFound):
        await turn_schedule(turns.client, name).describe()


async def test_a_bad_name_is_422_and_a_taken_one_409(api: Api, turns: TurnRunner) -> None:
    slashed = await api.http.post("/v1/schedules", json=body("k", "a/b"), headers=api.as_("mia"))
    assert slashed.status_code == 422 and slashed.json()["detail"][0]["loc"] == ["body", "name"]
    name = f"taken-{new_key()}"
    first = await api.http.post("/v1/schedules", json=body("k", name), headers=api.as_("mia"))
    again = await api.http.post("/v1/schedules", json=body("k", name), headers=api.as_("max"))
    assert (first.status_code, again.status_code) == (201, 409)
    await turn_schedule(turns.client, name).delete()
    paths = (await api.http.get("/openapi.json")).json()["paths"]
    assert {"/v1/schedules", "/v1/schedules/{schedule}/trigger"} <= set(paths)
