"""`agent.output_validators`: the application's checks of the final answer, run by the worker.

The workflow cannot see the worker's validators, only their names: it asks the
`validate_output` activity, once at the start of the turn (does the worker have them all?) and
then on each final answer that fits `output_schema`. A rejection goes back to the model as a
user message, like a schema correction, and costs an iteration; when `max_iterations` is spent
the turn fails with `MaxIterationsExceeded`, whose report carries the last answer. A turn
without validators runs no such activity.
"""

from __future__ import annotations

from typing import Final

from pydantic import JsonValue
from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.names import ACTIVITY_VALIDATE_OUTPUT
    from turnkeeper.contracts.output_validation import (
        FinalAnswer,
        ValidateOutputInput,
        ValidateOutputResult,
    )
    from turnkeeper.workflows.activity_calls import FailTurn, execute
    from turnkeeper.workflows.activity_options import VALIDATE_OUTPUT_RETRY, VALIDATE_OUTPUT_TIMEOUT
    from turnkeeper.workflows.failures import cause_message, error_type
    from turnkeeper.workflows.turn_state import Turn

_WHY_CHARS: Final = 200  # of a rejection's reason in the failure's one-sentence message


async def check_worker_has_them(turn: Turn) -> None:
    """Fails the turn with InvalidTurnRequest before its first model call when the worker
    lacks a validator the agent names."""
    if turn.request.agent.output_validators:
        await _validate(turn, None, "output validators")


async def rejection(turn: Turn, value: JsonValue) -> tuple[str, str] | None:
    """Runs the validators on the turn's last answer (`value`: its structured output, with a
    schema); None when they accept it, else the message that sends it back to the model and,
    for the failure should the turn end there, why."""
    agent = turn.request.agent
    if not agent.output_validators:
        return None
    answer = FinalAnswer(
        text=turn.messages[-1].text(),
        structured=agent.output_schema is not None,
        structured_output=value,
    )
    result = await _validate(turn, answer, f"validate output · {turn.iteration}")
    if result.rejected_by is None:
        return None
    why = f"output validator {result.rejected_by!r}: {_clip(result.reason, _WHY_CHARS)}"
    return corrective(result.rejected_by, result.reason, structured=answer.structured), why


def corrective(validator: str, reason: str, *, structured: bool) -> str:
    """The user message that sends a rejected answer back to the model."""
    again = "Answer again with only the JSON value" if structured else "Answer again"
    return (
        f"Your final answer was rejected by the output check {validator!r}: {reason}\n"
        f"{again}, correcting this."
    )


async def _validate(turn: Turn, answer: FinalAnswer | None, summary: str) -> ValidateOutputResult:
    check = ValidateOutputInput(validators=turn.request.agent.output_validators, answer=answer)
    return await execute(
        ACTIVITY_VALIDATE_OUTPUT,
        check,
        FailTurn(turn, _validation_failed),
        result_type=ValidateOutputResult,
        options=workflow.ActivityConfig(
            start_to_close_timeout=VALIDATE_OUTPUT_TIMEOUT,
            retry_policy=VALIDATE_OUTPUT_RETRY,
            summary=summary,
        ),
    )


def _validation_failed(err: ActivityError) -> tuple[str, str]:
    """A validator the worker lacks is the request's failure; one that broke is its own."""
    if error_type(err) == errors.INVALID_TURN_REQUEST:
        return errors.INVALID_TURN_REQUEST, cause_message(err)
    return errors.OUTPUT_VALIDATOR_ERROR, f"output validation: {cause_message(err)}"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
