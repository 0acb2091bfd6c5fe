"""Who may do what over the HTTP API (docs/http-api.md, Who may do what), in-process over the
fake turns: a member's turn billed to its tenant, prices and other tenants refused, the fields
the runtime owns refused, someone else's turn answered exactly as a missing one, the listing of
visible turns, tenants over HTTP, and the audit line of every change."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import structlog
from fastapi.testclient import TestClient
from turnkeeper.contracts.tenants import TenantCaps

from tests.unit.builders import request, request_json
from tests.unit.http.fake_turns import TURN_ID, FakeTurns
from turnkeeper.http import audit
from turnkeeper.http.app import create_app
from turnkeeper.http.auth import FailedSignIns
from turnkeeper.http.tokens import TokenStore
from turnkeeper.http.turns import TurnSummary

PRICE = {"input_per_mtok": 0.0, "output_per_mtok": 0.0}
MISSING = {"detail": f"no turn {TURN_ID!r}"}


class Api:
    """The app over `turns`, with an operator, members of tenants `acme` and `globex`, a member
    without a tenant, and the approver `alice`."""

    def __init__(self, tmp_path: Path, turns: FakeTurns) -> None:
        self.store = TokenStore(tmp_path / "tokens.json")
        self.turns = turns
        self.http = TestClient(create_app(turns, self.store, failures=FailedSignIns(limit=1000)))
        self.tokens = {
            "olga": self.store.add("olga", role="operator"),
            "mia": self.store.add("mia", tenant="acme"),
            "max": self.store.add("max", tenant="globex"),
            "nora": self.store.add("nora"),
            "alice": self.store.add("alice", tenant="acme"),
        }

    def as_(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}

    def start(self, name: str, body: dict[str, Any]) -> Any:
        return self.http.post("/v1/turns", json=body, headers=self.as_(name))


@pytest.fixture
def api(tmp_path: Path) -> Api:
    """`TURN_ID` started by mia, its agent approved by alice."""
    return Api(tmp_path, FakeTurns(approvers=["alice"], started_by="mia"))


def test_a_members_turn_is_owned_by_it_and_billed_to_its_tenant(api: Api) -> None:
    for body in (request_json(), request_json(tenant="acme")):
        assert api.start("mia", body).status_code == 201
    assert api.start("nora", request_json()).status_code == 201
    [(first, _, owner), (second, _, _), (untenanted, _, nora)] = api.turns.starts
    assert (first.tenant, second.tenant, owner) == ("acme", "acme", "mia")
    assert (untenanted.tenant, nora) == (None, "nora")


def test_a_member_bills_no_other_tenant(api: Api) -> None:
    other = api.start("mia", request_json(tenant="globex"))
    assert other.status_code == 403
    assert (
        other.json()["detail"] == "'mia' starts turns for its tenant 'acme' only, not for 'globex'"
    )
    untenanted = api.start("nora", request_json(tenant="acme"))
    assert untenanted.status_code == 403 and "has no tenant" in untenanted.json()["detail"]
    assert api.turns.starts == []


@pytest.mark.parametrize(
    ("agent", "where"),
    [
        ({"price": PRICE}, "agent.price"),
        (
            {"fallback_models": ["openai:gpt-4o", {"model": "gw:cheap", "price": PRICE}]},
            "agent.fallback_models[1].price",
        ),
        (
            {
                "subagents": [
                    {
                        "name": "writer",
                        "agent": {"id": "w", "model": "anthropic:x", "price": PRICE},
                    }
                ]
            },
            "agent.subagents[0].agent.price",
        ),
    ],
)
def test_a_members_price_is_refused_wherever_it_is(
    api: Api, agent: dict[str, Any], where: str
) -> None:
    refused = api.start("mia", request_json(agent=agent))
    assert refused.status_code == 403, refused.text
    assert "only an operator may set a price" in refused.json()["detail"]
    assert where in refused.json()["detail"]
    assert api.turns.starts == []
    assert api.start("olga", request_json(agent=agent)).status_code == 201


def test_an_operator_bills_any_tenant_at_any_price(api: Api) -> None:
    body = request_json(agent={"price": PRICE}, tenant="globex")
    assert api.start("olga", body).status_code == 201
    [(started, _, owner)] = api.turns.starts
    assert (started.tenant, started.agent.price is not None, owner) == ("globex", True, "olga")
    assert api.start("olga", request_json()).status_code == 201
    assert api.turns.starts[-1][0].tenant is None  # an operator's turn is billed as it says


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("started_by", "alice"),
        ("started_by", None),
        ("parent", {"workflow_id": "lead-1", "call_id": "c1"}),
        ("parent", None),
    ],
)
def test_fields_the_runtime_sets_are_422_naming_them(api: Api, field: str, value: Any) -> None:
    refused = api.start("olga", {**request_json(), field: value})
    assert refused.status_code == 422
    [error] = refused.json()["detail"]
    assert error["loc"] == ["body", field]
    assert f"{field} is set by the runtime, never by a caller" in error["msg"]
    assert api.turns.starts == []


@pytest.mark.parametrize(
    ("workflow_id", "why"),
    [
        ("approval-cache-unit-agent", "belong to an agent's standing approvals"),
        ("turnkeeper-tenant/acme", "belong to a tenant's spend ledger"),
        ("rate-limit-anthropic", "belong to a model's rate-limit ledger"),
        ("lead-1/writer-1", "belong to the runtime's sub-agent and session turns"),
        ("has space", "is not a turn id"),
        ("", "is not a turn id"),
        ("x" * 201, "is not a turn id"),
    ],
)
def test_an_id_that_is_not_a_turns_is_422_saying_why(api: Api, workflow_id: str, why: str) -> None:
    refused = api.start("olga", {**request_json(), "id": workflow_id})
    assert refused.status_code == 422
    [error] = refused.json()["detail"]
    assert error["loc"] == ["body", "id"] and why in error["msg"]
    assert api.turns.starts == []


def test_without_an_id_the_server_chooses_one(api: Api) -> None:
    started = api.start("mia", request_json())
    assert started.json() == {"workflow_id": "turn-new"}
    assert api.turns.starts[0][1] is None


def test_someone_elses_turn_is_answered_as_a_missing_one(api: Api) -> None:
    missing = "/v1/turns/turn-x"
    reads = [("get", ""), ("get", "/events")]
    writes = [
        ("post", "/decisions", {"call_id": "call-1", "approved": True}),
        ("post", "/steer", {"message": "stop"}),
        ("post", "/interrupt", {"reason": "stop"}),
        ("post", "/cancel", None),
    ]
    for method, tail, *body in [*reads, *writes]:
        json = body[0] if body else None
        for stranger in ("max", "nora"):
            answer = api.http.request(
                method, f"/v1/turns/{TURN_ID}{tail}", json=json, headers=api.as_(stranger)
            )
            absent = api.http.request(method, missing + tail, json=json, headers=api.as_(stranger))
            assert answer.status_code == absent.status_code == 404, (tail, answer.text)
            assert answer.json() == MISSING
            assert absent.json() == {"detail": "no turn 'turn-x'"}
    assert api.turns.updates == [] and api.turns.decided == []


def test_the_owner_the_approver_and_an_operator_see_the_turn(api: Api) -> None:
    for who in ("mia", "alice", "olga"):
        assert api.http.get(f"/v1/turns/{TURN_ID}", headers=api.as_(who)).status_code == 200
        events = api.http.get(f"/v1/turns/{TURN_ID}/events", headers=api.as_(who))
        assert "event: turn_finished" in events.text
    # A member of the owner's tenant is no one to the turn.
    mia_colleague = api.store.add("tom", tenant="acme")
    colleague = {"Authorization": f"Bearer {mia_colleague}"}
    assert api.http.get(f"/v1/turns/{TURN_ID}", headers=colleague).status_code == 404


def test_the_owner_cancels_and_an_operator_cancels(tmp_path: Path) -> None:
    for who in ("mia", "olga"):
        (tmp_path / who).mkdir()
        api = Api(tmp_path / who, FakeTurns(approvers=["alice"], started_by="mia"))
        assert api.http.post(f"/v1/turns/{TURN_ID}/cancel", headers=api.as_(who)).status_code == 202
        assert api.turns.updates == [("cancel", {})]


def test_only_approvers_decide_and_steer_where_the_agent_names_them(api: Api) -> None:
    decision = {"call_id": "call-1", "approved": True}
    for who in ("mia", "olga"):  # they see the turn, but alice decides
        refused = api.http.post(
            f"/v1/turns/{TURN_ID}/decisions", json=decision, headers=api.as_(who)
        )
        assert refused.status_code == 403
        assert refused.json() == {"detail": f"{who!r} is not an approver of agent 'unit-agent'"}
        steer = {"message": "hi"}
        refused = api.http.post(f"/v1/turns/{TURN_ID}/steer", json=steer, headers=api.as_(who))
        assert refused.status_code == 403
    assert api.turns.decided == [] and api.turns.updates == []
    done = api.http.post(f"/v1/turns/{TURN_ID}/decisions", json=decision, headers=api.as_("alice"))
    assert done.status_code == 200


def test_without_approvers_the_owner_and_operators_decide(tmp_path: Path) -> None:
    api = Api(tmp_path, FakeTurns(started_by="mia"))
    listed = {who: api.http.get("/v1/approvals", headers=api.as_(who)).json() for who in api.tokens}
    assert {who: [a["call_id"] for a in calls] for who, calls in listed.items()} == {
        "olga": ["call-1"],
        "mia": ["call-1"],
        "max": [],
        "nora": [],
        "alice": [],
    }
    decision = {"call_id": "call-1", "approved": True}
    stranger = api.http.post(
        f"/v1/turns/{TURN_ID}/decisions", json=decision, headers=api.as_("max")
    )
    assert stranger.status_code == 404
    owner = api.http.post(f"/v1/turns/{TURN_ID}/decisions", json=decision, headers=api.as_("mia"))
    assert owner.status_code == 200 and owner.json()[0]["approver"] == "mia"


def test_approvals_list_a_turn_to_its_approvers_only(api: Api) -> None:
    for who, calls in [("alice", 1), ("mia", 0), ("olga", 0), ("max", 0)]:
        assert len(api.http.get("/v1/approvals", headers=api.as_(who)).json()) == calls, who


def summary(workflow_id: str, started_by: str | None, minutes: int, state: str) -> TurnSummary:
    return TurnSummary(
        workflow_id=workflow_id,
        run_id=f"run-{workflow_id}",
        state=state,
        agent_id="unit-agent",
        cost_usd=0.5,
        started_by=started_by,
        started=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes),
    )


@pytest.fixture
def listed(api: Api) -> Api:
    """mia's two turns, max's one, and one of max's whose agent alice approves."""
    api.turns.listed = [
        summary("mia-1", "mia", 1, "completed"),
        summary("max-1", "max", 2, "running"),
        summary("mia-2", "mia", 3, "awaiting_approval"),
        summary("max-2", "max", 4, "running"),
    ]
    api.turns.requests = {
        "mia-1": request(),
        "max-1": request(),
        "mia-2": request(),
        "max-2": request(agent={"approvers": ["alice", "max"]}),
    }
    return api


def test_the_turns_list_shows_what_the_caller_may_see_newest_first(listed: Api) -> None:
    def ids(who: str, query: str = "") -> list[str]:
        answer = listed.http.get(f"/v1/turns{query}", headers=listed.as_(who))
        assert answer.status_code == 200, answer.text
        return [t["workflow_id"] for t in answer.json()]

    assert ids("olga") == ["max-2", "mia-2", "max-1", "mia-1"]
    assert ids("mia") == ["mia-2", "mia-1"]
    assert ids("alice") == ["max-2"]
    assert ids("max") == ["max-2", "max-1"]
    assert ids("nora") == []
    assert ids("mia", "?state=completed") == ["mia-1"]
    assert ids("olga", "?limit=1") == ["max-2"]
    [first] = listed.http.get("/v1/turns?limit=1", headers=listed.as_("mia")).json()
    assert first == {
        "workflow_id": "mia-2",
        "state": "awaiting_approval",
        "agent_id": "unit-agent",
        "cost_usd": 0.5,
        "started_by": "mia",
        "started": "2026-01-01T00:03:00Z",
    }


@pytest.mark.parametrize("query", ["?state=sleeping", "?limit=0", "?limit=201", "?limit=x"])
def test_a_bad_listing_is_422_naming_the_parameter(listed: Api, query: str) -> None:
    refused = listed.http.get(f"/v1/turns{query}", headers=listed.as_("olga"))
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["loc"][0] == "query"


def test_tenants_over_http(api: Api) -> None:
    caps = {"usd_per_day": 5, "usd_per_month": 100}
    refused = api.http.put("/v1/tenants/acme", json=caps, headers=api.as_("mia"))
    assert refused.status_code == 403
    assert refused.json() == {"detail": "only an operator may manage tenants; 'mia' is a member"}
    # 403 before the body is read: a member learns nothing of what would validate.
    bad = api.http.put("/v1/tenants/acme", json={"usd_per_day": -1}, headers=api.as_("mia"))
    assert bad.status_code == 403
    assert api.turns.tenants == {}
    put = api.http.put("/v1/tenants/acme", json=caps, headers=api.as_("olga"))
    assert put.status_code == 200 and put.json()["caps"] == {
        "usd_per_day": 5.0,
        "usd_per_month": 100.0,
    }
    assert api.turns.tenants == {"acme": TenantCaps(usd_per_day=5, usd_per_month=100)}
    assert api.http.get("/v1/tenants/acme", headers=api.as_("mia")).json()["tenant"] == "acme"
    assert api.http.get("/v1/tenants/acme", headers=api.as_("olga")).status_code == 200
    for who in ("max", "nora"):
        assert api.http.get("/v1/tenants/acme", headers=api.as_(who)).status_code == 403
    assert api.http.get("/v1/tenants/globex", headers=api.as_("olga")).status_code == 404
    for wrong in ("a%20b", "-x", "x" * 65):
        assert api.http.get(f"/v1/tenants/{wrong}", headers=api.as_("olga")).status_code == 422
        answer = api.http.put(f"/v1/tenants/{wrong}", json=caps, headers=api.as_("olga"))
        assert answer.status_code == 422
    negative = api.http.put("/v1/tenants/acme", json={"usd_per_day": -1}, headers=api.as_("olga"))
    assert negative.status_code == 422 and negative.json()["detail"][0]["loc"] == [
        "body",
        "usd_per_day",
    ]


class AuditRecords(logging.Handler):
    """The audit logger's records, caught on that logger itself: a test that configured the
    worker's logging earlier in the session may have stopped `turnkeeper` propagating to the
    root logger, where `caplog` listens."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def lines(self) -> list[str]:
        return [record.getMessage() for record in self.records]

    def text(self) -> str:
        return "\n".join(self.lines())


@pytest.fixture
def audited() -> Iterator[AuditRecords]:
    """The audit lines as a library user's process writes them: through `logging`, with
    structlog unconfigured (a test before may have configured it as the worker does, and the
    lines would then be rendered by that configuration instead)."""
    logger = logging.getLogger(audit.__name__)
    handler, level = AuditRecords(), logger.level
    configured, config = structlog.is_configured(), structlog.get_config()
    structlog.reset_defaults()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        if configured:
            structlog.configure(**config)


def test_every_change_is_audited_refusals_included_without_tokens_or_content(
    api: Api, audited: AuditRecords
) -> None:
    secret = "Move the money to account 12345"
    api.start("mia", {**request_json(task={"input": secret}), "id": "mine-1"})
    api.start("mia", request_json(tenant="globex"))
    api.start("mia", {**request_json(), "parent": None})
    api.http.post(f"/v1/turns/{TURN_ID}/steer", json={"message": secret}, headers=api.as_("max"))
    decision = {"call_id": "call-1", "approved": True, "reason": secret}
    api.http.post(f"/v1/turns/{TURN_ID}/decisions", json=decision, headers=api.as_("alice"))
    api.http.post(f"/v1/turns/{TURN_ID}/cancel", headers={"Authorization": "Bearer tk_guess"})
    api.http.put("/v1/tenants/acme", json={"usd_per_day": 1}, headers=api.as_("mia"))
    api.http.get(f"/v1/turns/{TURN_ID}", headers=api.as_("mia"))  # a read: not audited
    assert audited.lines() == [
        "api_call identity='mia' role='member' action='start' turn='mine-1' tenant=None status=201",
        "api_call identity='mia' role='member' action='start' turn=None tenant=None status=403",
        "api_call identity='mia' role='member' action='start' turn=None tenant=None status=422",
        "api_call identity='max' role='member' action='steer' turn='turn-1' tenant=None status=404",
        "api_call identity='alice' role='member' action='decide' turn='turn-1' tenant=None "
        "status=200",
        "api_call identity=None role=None action='POST /v1/turns/turn-1/cancel' turn=None "
        "tenant=None status=401",
        "api_call identity='mia' role='member' action='set_tenant_caps' turn=None tenant='acme' "
        "status=403",
    ]
    for token in [*api.tokens.values(), "tk_guess"]:
        assert token not in audited.text()
    assert secret not in audited.text()


def test_a_call_that_breaks_is_audited_as_500(
    api: Api, audited: AuditRecords, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a defect")

    monkeypatch.setattr(api.turns, "cancel", broken)
    with pytest.raises(RuntimeError):
        api.http.post(f"/v1/turns/{TURN_ID}/cancel", headers=api.as_("olga"))
    assert audited.lines() == [
        "api_call identity='olga' role='operator' action='cancel' turn='turn-1' tenant=None "
        "status=500"
    ]
