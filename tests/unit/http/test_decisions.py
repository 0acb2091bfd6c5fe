"""`POST /v1/turns/{id}/decisions` (turnkeeper/http/decisions.py) in-process over the fake
turns: who may decide is checked before the update is sent, the update goes to the turn whose
owner was checked and to no later turn at the same id, and a refusal of the turn is answered
with the status that says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from turnkeeper.contracts.signals import ApproveInput, DecisionRecord

from tests.unit.http.fake_turns import TURN_ID, FakeTurns
from turnkeeper.client.errors import DecisionRefused
from turnkeeper.http.app import create_app
from turnkeeper.http.auth import FailedSignIns
from turnkeeper.http.errors import ApiError
from turnkeeper.http.origins import StartedTurn
from turnkeeper.http.tokens import TokenStore

DECISIONS = f"/v1/turns/{TURN_ID}/decisions"
APPROVE = {"call_id": "call-1", "approved": True}
MISSING = {"detail": f"no turn {TURN_ID!r}"}


class ReusedId(FakeTurns):
    """A turn owned by mia that ends, and a turn of max starts at its id, between the read of
    its owner and the arrival of the decision."""

    async def decide(self, workflow_id: str, decision: ApproveInput, *args: Any) -> Any:
        self.started_by, self.chain = "max", "run-2"
        return await super().decide(workflow_id, decision, *args)


def client(tmp_path: Path, turns: FakeTurns) -> tuple[TestClient, dict[str, dict[str, str]]]:
    store = TokenStore(tmp_path / "tokens.json")
    tokens = {
        "mia": store.add("mia"),
        "max": store.add("max"),
        "olga": store.add("olga", role="operator"),
    }
    http = TestClient(create_app(turns, store, failures=FailedSignIns(limit=1000)))
    return http, {name: {"Authorization": f"Bearer {token}"} for name, token in tokens.items()}


def test_the_decision_goes_to_the_turn_whose_owner_was_checked(tmp_path: Path) -> None:
    turns = FakeTurns(started_by="mia")
    http, who = client(tmp_path, turns)
    answer = http.post(DECISIONS, json=APPROVE, headers=who["mia"])
    assert answer.status_code == 200 and answer.json()[0]["approver"] == "mia"
    assert turns.chains == ["run-1"]


def test_a_stranger_sends_nothing_and_learns_nothing(tmp_path: Path) -> None:
    turns = FakeTurns(started_by="mia")
    http, who = client(tmp_path, turns)
    for call_id in ("call-1", "call-9", ""):
        answer = http.post(DECISIONS, json={**APPROVE, "call_id": call_id}, headers=who["max"])
        assert (answer.status_code, answer.json()) == (404, MISSING)
    assert turns.chains == [] and turns.decided == []


def test_a_decision_meant_for_an_earlier_turn_at_the_id_is_not_applied(tmp_path: Path) -> None:
    turns = ReusedId(started_by="mia")
    http, who = client(tmp_path, turns)
    answer = http.post(DECISIONS, json=APPROVE, headers=who["mia"])
    # Mia may not see max's turn: exactly the answer for a missing turn, and nothing applied.
    assert (answer.status_code, answer.json()) == (404, MISSING)
    assert turns.chains == ["run-1"] and turns.decided == []


def test_an_operator_decides_on_the_turn_that_runs_at_the_id_now(tmp_path: Path) -> None:
    turns = ReusedId(started_by="mia")
    http, who = client(tmp_path, turns)
    answer = http.post(DECISIONS, json=APPROVE, headers=who["olga"])
    assert answer.status_code == 200
    assert turns.chains == ["run-1", "run-2"] and len(turns.decided) == 1


def test_a_turn_last_seen_at_the_id_grants_nothing_once_another_runs_there(
    tmp_path: Path,
) -> None:
    turns = FakeTurns(started_by="max")
    turns.hint = StartedTurn(turns.turn_request, "mia", "run-0")  # mia's turn, ended since
    http, who = client(tmp_path, turns)
    earlier_owner = http.post(DECISIONS, json=APPROVE, headers=who["mia"])
    assert (earlier_owner.status_code, earlier_owner.json()) == (404, MISSING)
    assert turns.chains == ["run-0"] and turns.decided == []
    # Nor does it refuse the owner of the turn there now.
    owner = http.post(DECISIONS, json=APPROVE, headers=who["max"])
    assert owner.status_code == 200 and turns.chains == ["run-0", "run-1"]


@pytest.mark.parametrize(
    ("call_id", "status", "detail"),
    [
        ("call-1", 409, "call 'call-1' of 'turn-1' is already decided"),
        ("call-9", 404, "no call 'call-9' waits for approval in 'turn-1'"),
    ],
)
def test_a_decision_on_an_ended_turn_says_decided_or_no_such_call(
    tmp_path: Path, call_id: str, status: int, detail: str
) -> None:
    turns = FakeTurns(started_by="mia")
    http, who = client(tmp_path, turns)
    assert http.post(DECISIONS, json=APPROVE, headers=who["mia"]).status_code == 200
    turns.finished = True
    answer = http.post(DECISIONS, json={**APPROVE, "call_id": call_id}, headers=who["olga"])
    assert (answer.status_code, answer.json()) == (status, {"detail": detail})


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({**APPROVE, "input": {"path": 3}}, 422),  # the edit does not fit the tool
        (APPROVE, 409),  # the signature does not count, say
        ({"call_id": "call-1", "approved": False, "input": {"path": 3}}, 409),  # input dropped
    ],
)
def test_a_refusal_of_a_waiting_call_says_why(
    tmp_path: Path, body: dict[str, Any], status: int
) -> None:
    turns = FakeTurns(started_by="mia")
    turns.refusal = DecisionRefused("the turn says no")
    http, who = client(tmp_path, turns)
    answer = http.post(DECISIONS, json=body, headers=who["mia"])
    assert (answer.status_code, answer.json()) == (status, {"detail": "the turn says no"})
    assert turns.decided == []


def test_temporal_refusing_the_update_for_a_waiting_call_is_said_as_it_was(
    tmp_path: Path,
) -> None:
    turns = FakeTurns(started_by="mia")
    turns.refusal = ApiError(502, "Temporal refused the request for 'turn-1': busy")
    http, who = client(tmp_path, turns)
    answer = http.post(DECISIONS, json=APPROVE, headers=who["mia"])
    assert answer.status_code == 502 and "busy" in answer.json()["detail"]


def test_the_records_are_the_turns_answer(tmp_path: Path) -> None:
    turns = FakeTurns(started_by="mia")
    http, who = client(tmp_path, turns)
    [record] = http.post(DECISIONS, json=APPROVE, headers=who["olga"]).json()
    assert DecisionRecord.model_validate(record).approver == "olga"
