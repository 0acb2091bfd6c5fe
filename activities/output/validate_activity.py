"""The `validate_output` activity: runs a turn's output validators on its final answer, on the
worker that has them.

A validator's rejection is an answer (`ValidateOutputResult.rejected_by`), not a failure: the
workflow sends it back to the model. A validator the worker lacks fails the call with
`InvalidTurnRequest`, and one that raises anything else with `OutputValidatorError`; both are
non-retryable, since they would only repeat.
"""

from __future__ import annotations

from typing import Final

from temporalio import activity
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.output.validators import (
    OutputRejected,
    OutputValidator,
    OutputValidatorFailure,
    OutputValidators,
)
from turnkeeper.activities.verdicts import clipped, judged_turn_id
from turnkeeper.contracts.errors import INVALID_TURN_REQUEST, OUTPUT_VALIDATOR_ERROR
from turnkeeper.contracts.names import ACTIVITY_VALIDATE_OUTPUT
from turnkeeper.contracts.output_validation import ValidateOutputInput, ValidateOutputResult

from turnkeeper.ground.logs import get_logger

log = get_logger(__name__)

# A rejection's reason joins the transcript and every later model call: long enough to explain,
# short enough that a validator quoting the whole answer back does not double the context.
MAX_REASON_CHARS: Final = 2_000


class OutputValidationActivities:
    """The `validate_output` activity over one worker's output validators."""

    def __init__(self, validators: OutputValidators) -> None:
        self._validators = validators

    @activity.defn(name=ACTIVITY_VALIDATE_OUTPUT)
    async def validate_output(self, check: ValidateOutputInput) -> ValidateOutputResult:
        """Checks the worker has every validator named, then runs them on the answer in order
        until one rejects it."""
        validators = [self._validator(name) for name in check.validators]
        if check.answer is None:
            return ValidateOutputResult()
        for validator in validators:
            try:
                await validator.check(check.answer)
            except OutputRejected as rejection:
                # The validator's name, never the reason: it may quote the answer.
                log.info("output_rejected", turn_id=judged_turn_id(), validator=validator.name)
                return ValidateOutputResult(
                    rejected_by=validator.name, reason=clipped(rejection.reason, MAX_REASON_CHARS)
                )
            except OutputValidatorFailure as failure:
                log.error(
                    "output_validator_error", turn_id=judged_turn_id(), validator=validator.name
                )
                raise ApplicationError(
                    str(failure), type=OUTPUT_VALIDATOR_ERROR, non_retryable=True
                ) from failure
        return ValidateOutputResult()

    def _validator(self, name: str) -> OutputValidator:
        validator = self._validators.get(name)
        if validator is None:
            known = ", ".join(self._validators.names()) or "none"
            raise ApplicationError(
                f"agent.output_validators: this worker has no output validator named {name!r} "
                f"(it has: {known})",
                type=INVALID_TURN_REQUEST,
                non_retryable=True,
            )
        return validator
