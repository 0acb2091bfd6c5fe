"""The `validate_output` activity: the first rejection is an answer, a validator the worker
lacks and one that breaks are typed, non-retryable failures."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.output.validate_activity import (
    MAX_REASON_CHARS,
    OutputValidationActivities,
)
from turnkeeper.activities.output.validators import (
    OutputRejected,
    OutputValidators,
    output_validator,
)
from turnkeeper.contracts.output_validation import (
    FinalAnswer,
    ValidateOutputInput,
    ValidateOutputResult,
)

ran: list[str] = []


@output_validator
def polite(text: str) -> None:
    ran.append("polite")
    if "please" not in text:
        raise OutputRejected("say please")


@output_validator
def short(text: str) -> None:
    ran.append("short")
    if len(text) > 20:
        raise OutputRejected("x" * (MAX_REASON_CHARS + 50))


@output_validator
def broken(text: str) -> None:
    raise RuntimeError("no connection to the PII service")


async def _validate(names: list[str], text: str | None) -> ValidateOutputResult:
    activities = OutputValidationActivities(OutputValidators([polite, short, broken]))
    answer = FinalAnswer(text=text) if text is not None else None
    check = ValidateOutputInput(validators=names, answer=answer)
    return await ActivityEnvironment().run(activities.validate_output, check)


async def test_an_answer_every_validator_accepts() -> None:
    assert await _validate(["polite", "short"], "yes please") == ValidateOutputResult()


async def test_the_first_rejection_stops_the_rest_and_comes_back_with_its_reason() -> None:
    ran.clear()

    result = await _validate(["polite", "short"], "no")

    assert result == ValidateOutputResult(rejected_by="polite", reason="say please")
    assert ran == ["polite"]


async def test_a_long_reason_is_cut_short() -> None:
    result = await _validate(["short"], "please " * 10)

    assert result.rejected_by == "short"
    assert len(result.reason) == MAX_REASON_CHARS and result.reason.endswith("…")


async def test_without_an_answer_it_only_checks_the_worker_has_them() -> None:
    ran.clear()

    assert await _validate(["polite"], None) == ValidateOutputResult()
    assert ran == []


@pytest.mark.parametrize("text", [None, "please"])
async def test_a_validator_the_worker_lacks_is_an_invalid_request(text: str | None) -> None:
    with pytest.raises(ApplicationError) as failure:
        await _validate(["polite", "no_pii"], text)

    assert failure.value.type == "InvalidTurnRequest" and failure.value.non_retryable
    assert "no output validator named 'no_pii' (it has: broken, polite, short)" in str(
        failure.value
    )


async def test_a_validator_that_breaks_is_a_non_retryable_validator_error() -> None:
    with pytest.raises(ApplicationError) as failure:
        await _validate(["broken"], "please")

    assert failure.value.type == "OutputValidatorError" and failure.value.non_retryable
    assert "'broken' raised RuntimeError: no connection to the PII service" in str(failure.value)
