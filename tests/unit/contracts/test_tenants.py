"""Tenant names and caps as the contract validates them: in a request, a session, and a cap."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from turnkeeper.contracts.session import SessionRequest
from turnkeeper.contracts.tenants import TenantCaps, ledger_id, tenant_problem
from turnkeeper.contracts.turn import TurnRequest

AGENT = {"id": "a", "model": "demo:scripted"}
TASK = {"id": "t", "input": "hi"}


@pytest.mark.parametrize("name", ["acme", "ACME-2", "a", "team.eu_1", "x" * 64, "7up"])
def test_names_that_are_names(name: str) -> None:
    assert tenant_problem(name) is None
    assert TurnRequest.model_validate({"agent": AGENT, "task": TASK, "tenant": name}).tenant == name


@pytest.mark.parametrize(
    "name", ["", "has space", "a/b", "-lead", ".dot", "x" * 65, "é", "tab\t", "new\nline", "a*"]
)
def test_names_that_are_not_names_are_refused_naming_the_field(name: str) -> None:
    assert tenant_problem(name) is not None
    with pytest.raises(ValidationError) as refused:
        TurnRequest.model_validate({"agent": AGENT, "task": TASK, "tenant": name})
    assert refused.value.errors()[0]["loc"] == ("tenant",)
    assert "is not a tenant name" in str(refused.value)


def test_no_tenant_is_the_default_and_a_session_passes_one() -> None:
    assert TurnRequest.model_validate({"agent": AGENT, "task": TASK}).tenant is None
    session = SessionRequest.model_validate({"agent": AGENT, "session_id": "s", "tenant": "acme"})
    assert session.tenant == "acme"
    with pytest.raises(ValidationError):
        SessionRequest.model_validate({"agent": AGENT, "session_id": "s", "tenant": "a b"})


@pytest.mark.parametrize("field", ["usd_per_day", "usd_per_month"])
def test_a_negative_or_infinite_cap_is_refused(field: str) -> None:
    with pytest.raises(ValidationError):
        TenantCaps.model_validate({field: -0.01})
    with pytest.raises(ValidationError):
        TenantCaps.model_validate({field: float("inf")})
    assert getattr(TenantCaps.model_validate({field: 0}), field) == 0


def test_the_ledger_id() -> None:
    assert ledger_id("acme") == "turnkeeper-tenant/acme"
