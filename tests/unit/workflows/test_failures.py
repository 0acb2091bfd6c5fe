"""How the turn reads an activity's failure (its type, its own message, a timeout) and how a
request that never became a turn is refused: the workflow's side of the error ladder."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.exceptions import ActivityError, ApplicationError, RetryState, TimeoutType
from temporalio.exceptions import TimeoutError as TemporalTimeoutError
from turnkeeper.contracts import errors
from turnkeeper.contracts.turn import AgentReport, TurnRequest
from turnkeeper.workflows.failures import (
    cause_message,
    describe,
    error_type,
    invalid_request,
    timed_out,
)

from tests.unit.builders import request_json


def activity_error(cause: BaseException | None) -> ActivityError:
    err = ActivityError(
        "Activity task failed",
        scheduled_event_id=5,
        started_event_id=6,
        identity="worker",
        activity_type="model_call",
        activity_id="1",
        retry_state=RetryState.NON_RETRYABLE_FAILURE,
    )
    err.__cause__ = cause
    return err


def test_an_application_error_gives_its_type_and_its_own_message() -> None:
    err = activity_error(ApplicationError("model refused", type=errors.LLM_AUTH_ERROR))
    assert error_type(err) == errors.LLM_AUTH_ERROR
    assert cause_message(err) == "model refused"
    assert not timed_out(err)


def test_a_timeout_says_which_timeout_and_has_no_type() -> None:
    cause = TemporalTimeoutError(
        "activity timeout",
        type=TimeoutType.START_TO_CLOSE,
        last_heartbeat_details=[],
    )
    err = activity_error(cause)
    assert timed_out(err)
    assert error_type(err) is None
    assert cause_message(err) == "timed out (start_to_close)"


def test_a_failure_without_a_cause_is_described_by_itself() -> None:
    err = activity_error(None)
    assert cause_message(err) == "Activity task failed"
    assert error_type(err) is None
    assert not timed_out(err)


def test_a_plain_exception_cause_keeps_its_text() -> None:
    assert cause_message(activity_error(RuntimeError("boom"))) == "boom"


def refusal_of(payload: Any) -> str:
    with pytest.raises(ValidationError) as raised:
        TurnRequest.model_validate(payload)
    return describe(raised.value)


def test_describe_names_every_bad_field_with_its_path() -> None:
    payload = request_json(agent={"max_iterations": 0}, task={"input": ""})
    described = refusal_of(payload)
    assert "agent.max_iterations: Input should be greater than or equal to 1" in described
    assert "task.input: String should have at least 1 character" in described
    assert described.count("; ") == 1


def test_describe_names_the_request_itself_when_it_is_no_object() -> None:
    assert refusal_of([1, 2]).startswith("request: ")


def test_an_invalid_request_fails_typed_not_retryable_with_what_the_payload_had() -> None:
    failure = invalid_request(request_json(agent={"id": "a1"}, task={"id": "t1"}), "bad thing")
    assert failure.type == errors.INVALID_TURN_REQUEST
    assert failure.non_retryable
    assert failure.message == "invalid turn request: bad thing"
    [report] = failure.details
    assert isinstance(report, AgentReport)
    assert (report.agent_id, report.task_id, report.outcome) == ("a1", "t1", "failed")


@pytest.mark.parametrize("payload", [None, "text", [], {"agent": "x", "task": 3}, {}])
def test_an_invalid_request_of_any_shape_still_gets_a_report(payload: Any) -> None:
    [report] = invalid_request(payload, "bad").details
    assert (report.agent_id, report.task_id) == ("", "")
