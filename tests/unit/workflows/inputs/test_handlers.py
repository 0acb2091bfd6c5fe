"""What the turn's and the session's handlers make of a payload: the refusal each kind of
handler gives one that does not fit, naming the field, and whom a refused signal came as."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts import errors
from turnkeeper.contracts.budget_extension import ExtendBudgetInput
from turnkeeper.contracts.signals import ApproveInput
from turnkeeper.workflows.inputs import handlers as inputs

from tests.unit.builders import request_json


def test_an_update_input_that_fits_is_its_model() -> None:
    decision = inputs.parsed({"call_id": "c1", "approved": True}, ApproveInput, "decision")
    assert (decision.call_id, decision.approved) == ("c1", True)


def test_an_update_input_that_does_not_fit_is_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match=r"^invalid extension: iterations: ") as refused:
        inputs.parsed({"iterations": "many"}, ExtendBudgetInput, "extension")
    assert type(refused.value) is ValueError  # a validator's rejection, as the client sees it


def test_an_update_may_refuse_in_its_own_way() -> None:
    def session_refused(message: str) -> ApplicationError:
        return ApplicationError(message, type=errors.SESSION_REFUSED)

    with pytest.raises(ApplicationError) as refused:
        inputs.validated(ApproveInput, {"approved": True}, "decision", session_refused)
    assert refused.value.type == errors.SESSION_REFUSED
    assert refused.value.message == "invalid decision: call_id: Field required"


@pytest.mark.parametrize(
    ("payload", "sender"),
    [
        ({"call_id": "c1", "approver": "ann", "approved": "perhaps"}, ("c1", "ann")),
        ({"call_id": 7}, ("7", "")),
        (["not", "an", "object"], ("", "")),
        (None, ("", "")),
    ],
)
def test_a_refused_signal_is_listed_under_what_it_names(payload: Any, sender: Any) -> None:
    assert inputs.sender_of(payload) == sender


def test_a_turn_request_that_does_not_validate_never_becomes_a_turn() -> None:
    payload = request_json(agent={"max_iterations": 0})
    with pytest.raises(ApplicationError) as failed:
        inputs.turn_request(payload)
    assert failed.value.type == errors.INVALID_TURN_REQUEST
    assert failed.value.message.startswith("invalid turn request: agent.max_iterations: ")


def test_a_turn_request_that_cannot_work_never_becomes_a_turn() -> None:
    payload = request_json(agent={"tools": ["read_file", "read_file"]})
    with pytest.raises(ApplicationError) as failed:
        inputs.turn_request(payload)
    assert failed.value.type == errors.INVALID_TURN_REQUEST
    assert "'read_file' more than once" in failed.value.message


def test_a_valid_turn_request_is_its_model() -> None:
    assert inputs.turn_request(request_json()).agent.id == request_json()["agent"]["id"]


def test_a_first_run_carries_nothing_and_a_continued_run_its_state() -> None:
    assert inputs.carried(None, ExtendBudgetInput) is None
    assert inputs.carried({"iterations": 2}, ExtendBudgetInput) == ExtendBudgetInput(iterations=2)


def test_an_update_validator_reads_an_encrypted_input_as_any_update_does() -> None:
    extension = inputs.update_input({"iterations": 2}, ExtendBudgetInput, "extension", "extend")
    assert extension.iterations == 2
    assert inputs.unencrypted_sender({"call_id": "c1"}) is None  # decoded: not a marked payload
