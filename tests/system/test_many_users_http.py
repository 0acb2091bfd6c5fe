"""Many users on one `turnkeeper serve` (docs/http-api.md, Who may do what), as users run it:
`turnkeeper tokens add … --role … --tenant …`, the server and `python worker.py` as processes
of their own, driven with plain HTTP. A member of another tenant attacks a member's turn in
every way the issue lists (read it, follow it, steer, interrupt, cancel, decide, bill its tenant,
price its own calls, take a runtime id, claim a parent or an owner, manage tenants); each attack
fails, is in the server's audit log without token or content, and the victim's turn finishes
untouched with the approver's decision."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx
import pytest

from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.driving import agent, task
from tests.system.serving import serving
from tests.system.test_http_api import add_token, scripted_write

PRICE = {"input_per_mtok": 0.0, "output_per_mtok": 0.0}
SECRET = "the victim's words"


@dataclass
class Deployment:
    """One server, one worker, and a client per identity: `olga` the operator, `mia` of
    tenant `acme` (the victim), `alice` who approves the victim's agent, `tom` of `acme` too,
    `max` of tenant `globex` (the attacker). The tenants' names are the test's own: a tenant's
    ledger outlives the test on the shared dev server, on the task queue of a worker that is
    gone."""

    worker: WorkerProcess
    url: str
    http: dict[str, httpx.AsyncClient]
    acme: str
    globex: str

    def serve_log(self, stack: SystemStack) -> list[dict[str, Any]]:
        lines = (stack.tmp_path / "serve.log").read_text().splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]


@pytest.fixture
async def deployment(stack: SystemStack) -> AsyncIterator[Deployment]:
    worker = await stack.start_worker()
    acme, globex = (f"{name}-{uuid.uuid4().hex[:8]}" for name in ("acme", "globex"))
    tokens = {
        "olga": await add_token(stack, worker, "olga", "--role", "operator"),
        "mia": await add_token(stack, worker, "mia", "--tenant", acme),
        "alice": await add_token(stack, worker, "alice", "--tenant", acme),
        "max": await add_token(stack, worker, "max", "--role", "member", "--tenant", globex),
        "tom": await add_token(stack, worker, "tom", "--tenant", acme),
    }
    async with serving(stack, worker) as url:
        clients = {
            name: httpx.AsyncClient(
                base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30
            )
            for name, token in tokens.items()
        }
        try:
            yield Deployment(worker, url, clients, acme, globex)
        finally:
            for client in clients.values():
                await client.aclose()


async def waiting_call(http: httpx.AsyncClient, workflow_id: str) -> dict[str, Any]:
    async def mine() -> list[dict[str, Any]]:
        return [
            a for a in (await http.get("/v1/approvals")).json() if a["workflow_id"] == workflow_id
        ]

    [call] = await until(mine, bool, f"a call of {workflow_id} to wait for approval")
    return call


async def test_another_tenants_member_cannot_touch_a_turn_that_finishes_untouched(
    stack: SystemStack, deployment: Deployment
) -> None:
    mia, alice, max_, olga = (deployment.http[n] for n in ("mia", "alice", "max", "olga"))
    acme, globex = deployment.acme, deployment.globex
    key = scripted_write(stack, "out.md", "mia's")
    body = {"agent": agent(key, approvers=["alice"]), "task": task(key, SECRET), "id": f"mia-{key}"}
    started = await mia.post("/v1/turns", json=body)
    assert started.status_code == 201, started.text
    victim = started.json()["workflow_id"]
    call = await waiting_call(alice, victim)

    missing = f"/v1/turns/nobody-{key}"
    attacks = [
        ("get", "", None),
        ("get", "/events", None),
        ("post", "/steer", {"message": SECRET}),
        ("post", "/interrupt", {"reason": SECRET}),
        ("post", "/cancel", None),
        ("post", "/decisions", {"call_id": call["call_id"], "approved": False, "reason": SECRET}),
    ]
    for method, tail, payload in attacks:
        answer = await max_.request(method, f"/v1/turns/{victim}{tail}", json=payload)
        absent = await max_.request(method, missing + tail, json=payload)
        assert answer.status_code == absent.status_code == 404, (tail, answer.text)
        assert answer.json() == {"detail": f"no turn {victim!r}"}
        assert absent.json() == {"detail": f"no turn 'nobody-{key}'"}
    # A member of the victim's own tenant is no one to the turn either.
    colleague = await deployment.http["tom"].get(f"/v1/turns/{victim}")
    assert colleague.status_code == 404 and colleague.json() == {"detail": f"no turn {victim!r}"}
    assert [a for a in (await max_.get("/v1/approvals")).json() if a["workflow_id"] == victim] == []
    assert victim not in [t["workflow_id"] for t in (await max_.get("/v1/turns")).json()]

    # Starting turns that would bill the victim's tenant, price calls, or take what the runtime
    # owns (the victim's agent's standing approvals, its tenant's ledger, a child of its turn).
    other_key = scripted_write(stack, "max.md", "max's")
    mine = {"agent": agent(other_key), "task": task(other_key)}
    refused = [
        ({**mine, "tenant": acme}, 403, f"starts turns for its tenant {globex!r} only"),
        ({**mine, "agent": {**mine["agent"], "price": PRICE}}, 403, "agent.price"),
        ({**mine, "started_by": "mia"}, 422, "started_by is set by the runtime"),
        ({**mine, "parent": {"workflow_id": victim, "call_id": "c"}}, 422, "parent is set"),
        ({**mine, "id": "approval-cache-system-agent"}, 422, "standing approvals"),
        ({**mine, "id": f"turnkeeper-tenant/{acme}"}, 422, "spend ledger"),
        ({**mine, "id": f"{victim}/writer-1"}, 422, "sub-agent and session turns"),
    ]
    for attack, status, why in refused:
        answer = await max_.post("/v1/turns", json=attack)
        assert answer.status_code == status, (attack, answer.text)
        assert why in answer.text
    assert (await max_.put(f"/v1/tenants/{acme}", json={"usd_per_day": 0})).status_code == 403
    assert (await max_.get(f"/v1/tenants/{acme}")).status_code == 403

    decided = await alice.post(
        f"/v1/turns/{victim}/decisions", json={"call_id": call["call_id"], "approved": True}
    )
    assert decided.status_code == 200, decided.text

    async def state() -> str:
        return (await mia.get(f"/v1/turns/{victim}")).json()["state"]

    assert (
        await until(state, lambda s: s == "completed", "the victim's turn to finish") == "completed"
    )
    assert (deployment.worker.workspace / "out.md").read_text() == "mia's"
    assert (await mia.get(f"/v1/turns/{victim}")).json()["started_by"] == "mia"
    assert not (deployment.worker.workspace / "max.md").exists()
    [listed] = [t for t in (await olga.get("/v1/turns")).json() if t["workflow_id"] == victim]
    assert (listed["started_by"], listed["agent_id"]) == ("mia", "system-agent")
    described = await stack.temporal("workflow", "describe", "--workflow-id", victim)
    attributes = json.dumps(described)
    assert (
        '"StartedBy"' in attributes and f'"{acme}"' in attributes
    )  # owner and tenant, by the server

    audit = [line for line in deployment.serve_log(stack) if line.get("event") == "api_call"]
    by_max = [
        (line["action"], line["turn"], line["status"])
        for line in audit
        if line["identity"] == "max"
    ]
    for action in ("steer", "interrupt", "cancel", "decide"):
        assert (action, victim, 404) in by_max, by_max
    assert ("start", None, 403) in by_max and ("start", None, 422) in by_max
    assert ("set_tenant_caps", None, 403) in by_max
    assert any(
        line["identity"] == "alice" and line["action"] == "decide" and line["status"] == 200
        for line in audit
    )
    text = (stack.tmp_path / "serve.log").read_text()
    assert SECRET not in text and "tk_" not in text


async def test_the_turns_list_and_tenants_by_role(
    stack: SystemStack, deployment: Deployment
) -> None:
    mia, max_, olga = (deployment.http[n] for n in ("mia", "max", "olga"))
    ids: dict[str, str] = {}
    for who in ("mia", "max"):
        key = scripted_write(stack, f"{who}.md", who)
        body = {"agent": agent(key), "task": task(key), "id": f"{who}-{key}"}
        started = await deployment.http[who].post("/v1/turns", json=body)
        assert started.status_code == 201, started.text
        ids[who] = started.json()["workflow_id"]
        await waiting_call(deployment.http[who], ids[who])

    async def listed(http: httpx.AsyncClient, query: str = "") -> list[str]:
        """This test's turns among those listed (the dev server holds other tests' turns)."""
        answer = await http.get(f"/v1/turns{query}")
        assert answer.status_code == 200, answer.text
        return [t["workflow_id"] for t in answer.json() if t["workflow_id"] in ids.values()]

    both = await until(
        lambda: listed(olga, "?state=awaiting_approval"),
        lambda found: set(ids.values()) <= set(found),
        "both turns listed",
    )
    assert both.index(ids["max"]) < both.index(ids["mia"])  # newest first
    assert await listed(mia) == [ids["mia"]]
    assert await listed(max_, "?state=awaiting_approval") == [ids["max"]]
    assert await listed(max_, "?state=completed") == []
    assert (await max_.get("/v1/turns?state=asleep")).status_code == 422

    caps = {"usd_per_day": 5, "usd_per_month": 50}
    acme = deployment.acme
    assert (await mia.put(f"/v1/tenants/{acme}", json=caps)).status_code == 403
    put = await olga.put(f"/v1/tenants/{acme}", json=caps)
    assert put.status_code == 200, put.text
    assert put.json()["caps"] == {"usd_per_day": 5.0, "usd_per_month": 50.0}
    shown = await mia.get(f"/v1/tenants/{acme}")
    assert shown.status_code == 200 and shown.json()["caps"]["usd_per_day"] == 5.0
    assert (await max_.get(f"/v1/tenants/{acme}")).status_code == 403
    for who in ("mia", "max"):  # the owners end their own turns
        assert (await deployment.http[who].post(f"/v1/turns/{ids[who]}/cancel")).status_code == 202
