"""`GET /v1/evals` and `GET /v1/evals/{id}` in-process over a fake of the runs: owned like
turns (the owner and the operators see a run; to anyone else it is missing, word for word)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from turnkeeper.contracts.evals import CaseResult, EvalProgress

from tests.unit.http.fake_turns import FakeTurns
from turnkeeper.client.eval_runs import ListedEvalRun
from turnkeeper.http.app import create_app
from turnkeeper.http.auth import FailedSignIns
from turnkeeper.http.evals import no_run
from turnkeeper.http.tokens import TokenStore

PROGRESS = EvalProgress(
    dataset="d",
    total=1,
    models=["m"],
    results=[CaseResult(case="a", model="m", repetition=1, outcome="completed")],
    done=True,
)


class FakeRuns:
    """Run `eval-1` started by mia, and a listing that remembers who it was asked for."""

    def __init__(self) -> None:
        self.listed_for: list[str | None] = []

    async def list_runs(self, started_by: str | None, limit: int) -> list[ListedEvalRun]:
        self.listed_for.append(started_by)
        started = datetime(2026, 1, 1, tzinfo=UTC)
        return [ListedEvalRun(run_id="eval-1", status="completed", started=started)]

    async def read(self, run_id: str) -> tuple[EvalProgress, str | None]:
        if run_id != "eval-1":
            raise no_run(run_id)
        return PROGRESS, "mia"


@pytest.fixture
def api(tmp_path: Path) -> tuple[TestClient, FakeRuns, dict[str, dict[str, str]]]:
    store = TokenStore(tmp_path / "tokens.json")
    runs = FakeRuns()
    app = create_app(FakeTurns(), store, failures=FailedSignIns(limit=100), evals=runs)
    tokens = {n: store.add(n, tenant="acme") for n in ("mia", "max")}
    tokens["olga"] = store.add("olga", role="operator")
    headers = {n: {"Authorization": f"Bearer {t}"} for n, t in tokens.items()}
    return TestClient(app), runs, headers


def test_the_owner_and_operators_read_a_run(api: tuple[TestClient, FakeRuns, dict]) -> None:
    http, _, headers = api
    for name in ("mia", "olga"):
        answer = http.get("/v1/evals/eval-1", headers=headers[name])
        assert answer.status_code == 200
        body = answer.json()
        assert body["summary"][0]["pass_rate"] == 1.0 and body["started_by"] == "mia"


def test_someone_elses_run_is_missing_word_for_word(api: tuple[TestClient, FakeRuns, dict]) -> None:
    http, _, headers = api
    other = http.get("/v1/evals/eval-1", headers=headers["max"])
    missing = http.get("/v1/evals/eval-2", headers=headers["max"])
    assert other.status_code == missing.status_code == 404
    assert other.json() == {"detail": "no evaluation run 'eval-1'"}
    assert missing.json() == {"detail": "no evaluation run 'eval-2'"}
    assert http.get("/v1/evals/eval-1").status_code == 401


def test_a_member_lists_its_own_runs_an_operator_all(
    api: tuple[TestClient, FakeRuns, dict],
) -> None:
    http, runs, headers = api
    assert http.get("/v1/evals", headers=headers["max"]).status_code == 200
    assert http.get("/v1/evals?limit=5", headers=headers["olga"]).json()[0]["run_id"] == "eval-1"
    assert runs.listed_for == ["max", None]
