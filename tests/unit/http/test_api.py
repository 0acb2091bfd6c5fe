"""The HTTP API in-process (FastAPI's TestClient) over a fake of the turn operations: sign-in,
what each endpoint sends and answers, and every wrong input's status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient

from tests.support.signing_keys import write_key
from tests.unit.builders import request_json
from tests.unit.http.fake_turns import TURN_ID, FakeTurns
from turnkeeper.http import app as app_module
from turnkeeper.http.app import create_app
from turnkeeper.http.auth import FailedSignIns
from turnkeeper.http.tokens import TokenStore

DECISIONS = f"/v1/turns/{TURN_ID}/decisions"


class Api:
    def __init__(self, tmp_path: Path, turns: FakeTurns, **options: Any) -> None:
        self.store = TokenStore(tmp_path / "tokens.json")
        self.turns = turns
        # This suite's many refused sign-ins come from one address; the limit has its own test.
        options.setdefault("failures", FailedSignIns(limit=1000))
        self.http = TestClient(create_app(turns, self.store, **options))

    def token(self, name: str, key: Path | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.store.add(name, key)}"}


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api(tmp_path, FakeTurns(approvers=["alice"]))


def test_every_v1_endpoint_needs_a_valid_token(api: Api) -> None:
    calls = [
        ("post", "/v1/turns"),
        ("get", f"/v1/turns/{TURN_ID}"),
        ("get", f"/v1/turns/{TURN_ID}/events"),
        ("get", "/v1/approvals"),
        ("post", DECISIONS),
        ("post", f"/v1/turns/{TURN_ID}/steer"),
        ("post", f"/v1/turns/{TURN_ID}/interrupt"),
        ("post", f"/v1/turns/{TURN_ID}/cancel"),
    ]
    for method, path in calls:
        missing = api.http.request(method, path)
        wrong = api.http.request(method, path, headers={"Authorization": "Bearer nope"})
        assert (missing.status_code, wrong.status_code) == (401, 401), path
        assert missing.headers["WWW-Authenticate"] == "Bearer"
    assert api.turns.updates == [] and api.turns.decided == []


def test_openapi_and_the_inbox_need_no_token(api: Api) -> None:
    paths = api.http.get("/openapi.json").json()["paths"]
    assert "/v1/turns/{workflow_id}/decisions" in paths
    page = api.http.get("/")
    assert page.status_code == 200 and "sessionStorage" in page.text
    assert "http://" not in page.text and "https://" not in page.text  # offline: nothing fetched


def test_a_turn_starts_with_its_id(api: Api) -> None:
    body = {**request_json(), "id": "mine-1"}
    answer = api.http.post("/v1/turns", json=body, headers=api.token("alice"))
    assert answer.status_code == 201
    assert answer.json() == {"workflow_id": "mine-1"}
    [(started, workflow_id, owner)] = api.turns.starts
    assert (started.agent.id, workflow_id, owner) == ("unit-agent", "mine-1", "alice")


def test_an_invalid_request_is_422_naming_the_field(api: Api) -> None:
    body = request_json()
    del body["task"]["input"]
    answer = api.http.post("/v1/turns", json=body, headers=api.token("alice"))
    assert answer.status_code == 422
    assert ["body", "task", "input"] in [error["loc"] for error in answer.json()["detail"]]
    assert api.turns.starts == []


def test_the_approver_is_the_token_identity(api: Api) -> None:
    decision = {"call_id": "call-1", "approved": True, "reason": "fine"}
    answer = api.http.post(DECISIONS, json=decision, headers=api.token("alice"))
    assert answer.status_code == 200
    assert answer.json()[0]["approver"] == "alice"
    [(sent, key)] = api.turns.decided
    assert (sent.approver, sent.reason, key) == ("alice", "fine", None)


def test_an_approver_field_in_the_body_is_refused(api: Api) -> None:
    decision = {"call_id": "call-1", "approved": True, "approver": "alice"}
    answer = api.http.post(DECISIONS, json=decision, headers=api.token("mallory"))
    assert answer.status_code == 422
    assert answer.json()["detail"][0]["loc"] == ["body", "approver"]
    assert api.turns.decided == []


def test_decision_errors(api: Api) -> None:
    alice, bob = api.token("alice"), api.token("bob")
    cases = [
        (bob, TURN_ID, {"call_id": "call-1", "approved": True}, 404),
        (alice, "turn-x", {"call_id": "call-1", "approved": True}, 404),
        (alice, TURN_ID, {"call_id": "call-9", "approved": True}, 404),
        (alice, TURN_ID, {"call_id": "call-1"}, 422),
        (alice, TURN_ID, {"call_id": "call-1", "approved": "maybe"}, 422),
        (alice, TURN_ID, {"call_id": "call-1", "approved": True, "input": []}, 422),
    ]
    for headers, turn_id, body, status in cases:
        answer = api.http.post(f"/v1/turns/{turn_id}/decisions", json=body, headers=headers)
        assert answer.status_code == status, (body, answer.json())
    assert api.turns.decided == []
    first = api.http.post(DECISIONS, json={"call_id": "call-1", "approved": False}, headers=alice)
    assert first.status_code == 200
    again = api.http.post(DECISIONS, json={"call_id": "call-1", "approved": True}, headers=alice)
    assert again.status_code == 409
    assert "already decided" in again.json()["detail"]


def test_a_keyed_identity_signs_its_decisions(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    key_file = write_key(tmp_path / "alice_ed25519", key)
    public = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPm4xLwDhNUl4xFuy0n0ykzqxZt1vTTnDZhVdGbqz9H7"
    api = Api(tmp_path, FakeTurns(approvers=[{"name": "alice", "public_key": public}]))
    decision = {"call_id": "call-1", "approved": True}
    answer = api.http.post(DECISIONS, json=decision, headers=api.token("alice", key_file))
    assert answer.status_code == 200 and answer.json()[0]["signed"]
    [(_, used)] = api.turns.decided
    assert used.public_key().public_bytes_raw() == key.public_key().public_bytes_raw()


def test_approvals_list_only_what_the_caller_may_decide(api: Api) -> None:
    mine = api.http.get("/v1/approvals", headers=api.token("alice")).json()
    assert [(a["workflow_id"], a["call_id"], a["tool"], a["cost_usd"]) for a in mine] == [
        (TURN_ID, "call-1", "write_file", 0.25)
    ]
    assert mine[0]["input"] == {"path": "a.md", "content": "x"}
    assert mine[0]["attachments"] == []
    assert api.http.get("/v1/approvals", headers=api.token("bob")).json() == []


def test_events_carry_ids_and_resume_after_last_event_id(api: Api) -> None:
    alice = api.token("alice")
    whole = api.http.get(f"/v1/turns/{TURN_ID}/events", headers=alice)
    assert whole.headers["content-type"].startswith("text/event-stream")
    ids = [line[4:] for line in whole.text.splitlines() if line.startswith("id: ")]
    assert ids == ["0", "1", "2", "3", "4"]
    resumed = api.http.get(f"/v1/turns/{TURN_ID}/events", headers={**alice, "Last-Event-ID": "2"})
    assert [line for line in resumed.text.splitlines() if line.startswith("id: ")] == [
        "id: 3",
        "id: 4",
    ]
    assert "event: turn_finished" in resumed.text
    bad = api.http.get(f"/v1/turns/{TURN_ID}/events", headers={**alice, "Last-Event-ID": "x"})
    assert bad.status_code == 422
    assert api.http.get("/v1/turns/nope/events", headers=alice).status_code == 404


def test_a_quiet_stream_sends_keepalive_comments(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_module, "KEEPALIVE_S", 0.01)
    api.turns.event_count, api.turns.event_pause_s = 2, 0.1
    answer = api.http.get(f"/v1/turns/{TURN_ID}/events", headers=api.token("alice"))
    assert ": keepalive" in answer.text
    assert [line for line in answer.text.splitlines() if line.startswith("id: ")] == [
        "id: 0",
        "id: 1",
    ]


def test_steer_interrupt_and_cancel_carry_the_identity(api: Api) -> None:
    alice = api.token("alice")
    steer = api.http.post(f"/v1/turns/{TURN_ID}/steer", json={"message": "Be brief"}, headers=alice)
    assert steer.json() == {"accepted": True, "iteration": 2}
    api.http.post(f"/v1/turns/{TURN_ID}/interrupt", json={"reason": "enough"}, headers=alice)
    assert api.http.post(f"/v1/turns/{TURN_ID}/cancel", headers=alice).status_code == 202
    assert api.turns.updates == [
        ("steer", {"message": "Be brief", "author": "alice"}),
        ("interrupt", {"reason": "enough", "author": "alice"}),
        ("cancel", {}),
    ]


def test_steering_errors(api: Api) -> None:
    alice = api.token("alice")
    empty = api.http.post(f"/v1/turns/{TURN_ID}/steer", json={"message": ""}, headers=alice)
    assert empty.status_code == 422 and empty.json()["detail"][0]["loc"] == ["body", "message"]
    author = {"message": "hi", "author": "bob"}
    assert (
        api.http.post(f"/v1/turns/{TURN_ID}/steer", json=author, headers=alice).status_code == 422
    )
    assert (
        api.http.post("/v1/turns/x/steer", json={"message": "hi"}, headers=alice).status_code == 404
    )
    api.turns.finished = True
    for path, body in [("steer", {"message": "hi"}), ("interrupt", {}), ("cancel", None)]:
        answer = api.http.post(f"/v1/turns/{TURN_ID}/{path}", json=body, headers=alice)
        assert answer.status_code == 409 and "has ended" in answer.json()["detail"]
    assert api.turns.updates == []


def test_only_an_approver_steers_or_interrupts_and_a_keyed_one_signs(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    key_file = write_key(tmp_path / "alice_ed25519", key)
    public = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPm4xLwDhNUl4xFuy0n0ykzqxZt1vTTnDZhVdGbqz9H7"
    api = Api(tmp_path, FakeTurns(approvers=[{"name": "alice", "public_key": public}]))
    for path, body in [("steer", {"message": "hi"}), ("interrupt", {"reason": "stop"})]:
        refused = api.http.post(f"/v1/turns/{TURN_ID}/{path}", json=body, headers=api.token("bob"))
        assert refused.status_code == 404 and refused.json() == {"detail": f"no turn {TURN_ID!r}"}
    assert api.turns.updates == []

    steer = {"message": "Be brief"}
    alice = api.token("alice", key_file)
    assert api.http.post(f"/v1/turns/{TURN_ID}/steer", json=steer, headers=alice).is_success
    [used] = api.turns.keys
    assert used is not None
    assert used.public_key().public_bytes_raw() == key.public_key().public_bytes_raw()


def test_a_keyed_turn_is_cancelled_only_with_an_approvers_key(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    key_file = write_key(tmp_path / "alice_ed25519", key)
    public = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPm4xLwDhNUl4xFuy0n0ykzqxZt1vTTnDZhVdGbqz9H7"
    approvers = [{"name": "alice", "public_key": public}, "carol"]
    api = Api(tmp_path, FakeTurns(approvers=approvers))
    cancel = f"/v1/turns/{TURN_ID}/cancel"

    mallory = api.http.post(cancel, headers=api.token("mallory"))
    carol = api.http.post(cancel, headers=api.token("carol"))
    assert mallory.status_code == 404  # neither owner nor approver: the turn does not exist
    assert carol.status_code == 403 and "'carol' has no key" in carol.text
    # Nor does she steer or decide there: the turn would refuse whatever she sent unsigned.
    steer = api.http.post(
        f"/v1/turns/{TURN_ID}/steer", json={"message": "hi"}, headers=api.token("carol")
    )
    decision = api.http.post(
        DECISIONS, json={"call_id": "call-1", "approved": True}, headers=api.token("carol")
    )
    assert (steer.status_code, decision.status_code) == (403, 403)
    assert api.turns.updates == [] and api.turns.decided == []

    assert api.http.post(cancel, headers=api.token("alice", key_file)).status_code == 202
    assert api.turns.updates == [("cancel", {"author": "alice"})]
    [used] = api.turns.keys
    assert used is not None
    assert used.public_key().public_bytes_raw() == key.public_key().public_bytes_raw()


def test_cors_is_off_unless_an_origin_is_allowed(tmp_path: Path) -> None:
    preflight = {
        "Origin": "https://ops.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization",
    }
    closed = Api(tmp_path, FakeTurns()).http.options("/v1/approvals", headers=preflight)
    assert "access-control-allow-origin" not in closed.headers
    opened = Api(tmp_path, FakeTurns(), cors_origins=["https://ops.example"])
    answer = opened.http.options("/v1/approvals", headers=preflight)
    assert answer.headers["access-control-allow-origin"] == "https://ops.example"


def test_tokens_never_reach_the_log(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    headers = api.token("alice")
    api.http.get("/v1/approvals", headers=headers)
    api.http.get("/v1/approvals", headers={"Authorization": "Bearer tk_secret_guess"})
    token = headers["Authorization"].split()[1]
    assert token not in caplog.text and "tk_secret_guess" not in caplog.text


def test_a_nested_turn_id_is_a_path_of_its_own(tmp_path: Path) -> None:
    """A session's or sub-agent's turn (`<parent>/turn-1`) is reached under its whole id, and a
    suffix after it is still the route under the turn."""
    nested = "conversation:helper:chat-1/turn-1"
    api = Api(tmp_path, FakeTurns(approvers=["alice"], turn_id=nested))
    alice = api.token("alice")
    assert api.http.get(f"/v1/turns/{nested}", headers=alice).json()["state"]
    streamed = api.http.get(f"/v1/turns/{nested}/events", headers=alice)
    assert "event: turn_finished" in streamed.text
    decision = {"call_id": "call-1", "approved": True}
    decided = api.http.post(f"/v1/turns/{nested}/decisions", json=decision, headers=alice)
    assert decided.status_code == 200, decided.json()
    assert api.http.get("/v1/turns/conversation:helper:chat-1", headers=alice).status_code == 404
