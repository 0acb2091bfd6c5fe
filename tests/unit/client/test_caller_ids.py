"""What a client refuses before it asks the server for anything: an id the runtime keeps (or not
of the turn shape) and a `parent` (the runtime's), each as `InvalidTurnRequest` naming why; and
the search attributes a start sets, `StartedBy` among them when a server names the owner."""

from __future__ import annotations

import pytest
from turnkeeper.contracts.search_attributes import AGENT_ID, STARTED_BY, identity_search_attributes

from tests.unit.builders import request
from turnkeeper.client.errors import InvalidTurnRequest
from turnkeeper.client.turns import check_caller_request, turn_workflow_id


@pytest.mark.parametrize(
    ("workflow_id", "says"),
    [
        ("approval-cache-unit-agent", "an agent's standing approvals"),
        ("turnkeeper-tenant/acme", "a tenant's spend ledger"),
        ("rate-limit-anthropic:claude-sonnet-4-6", "a model's rate-limit ledger"),
        ("turn-lead/writer-1", "sub-agent and session turns"),
        ("has space", "is not a turn id"),
        ("-starts-with-a-dash", "is not a turn id"),
        ("x" * 201, "at most 200 characters"),
    ],
)
def test_an_id_a_caller_may_not_give_is_refused_naming_why(workflow_id: str, says: str) -> None:
    with pytest.raises(InvalidTurnRequest, match="invalid turn request: ") as refused:
        check_caller_request(request(), workflow_id)
    assert says in refused.value.message


def test_a_parent_from_a_caller_is_refused() -> None:
    child = request(parent={"workflow_id": "lead", "call_id": "toolu_1", "depth": 1})
    with pytest.raises(InvalidTurnRequest, match="parent: is set by the runtime"):
        check_caller_request(child, "turn-1")


def test_the_default_id_of_any_agent_is_a_turn_id() -> None:
    check_caller_request(request(), turn_workflow_id("unit-agent", "1a2b3c4d"))
    assert turn_workflow_id("team/alpha bot", "1a2b") == "turn-team-alpha-bot-1a2b"
    check_caller_request(request(), turn_workflow_id("team/alpha bot", "1a2b"))


def test_started_by_is_set_at_start_only_when_given() -> None:
    plain = identity_search_attributes(request())
    assert plain.get(STARTED_BY) is None and plain.get(AGENT_ID) == "unit-agent"
    owned = identity_search_attributes(request(), "alice")
    assert owned.get(STARTED_BY) == "alice"
