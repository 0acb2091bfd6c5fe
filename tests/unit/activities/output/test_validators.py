"""`@turnkeeper.output_validator` and the worker's registry of them: what a validator may take,
and what reaches it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from turnkeeper.activities.output.validators import (
    OutputRejected,
    OutputValidatorFailure,
    OutputValidators,
    output_validator,
)
from turnkeeper.contracts.output_validation import FinalAnswer

import turnkeeper
from turnkeeper.worker.settings import Settings
from turnkeeper.worker.wiring import tool_registry


class Invoice(BaseModel):
    total: int


def test_the_decorator_is_turnkeepers_and_names_the_validator() -> None:
    @turnkeeper.output_validator
    def short(text: str) -> None: ...

    @turnkeeper.output_validator(name="no_pii")
    def pii(text: str, output: Invoice) -> None: ...

    assert (short.name, short.wants_text, short.wants_output) == ("short", True, False)
    assert (pii.name, pii.wants_output, pii.output_type) == ("no_pii", True, Invoice)


@pytest.mark.parametrize(
    "signature", ["def v(): ...", "def v(answer): ...", "def v(text, extra): ..."]
)
def test_a_validator_takes_text_and_or_output_only(signature: str) -> None:
    namespace: dict[str, Any] = {}
    exec(signature, namespace)

    with pytest.raises(TypeError, match="must take `text` and/or `output`"):
        output_validator(namespace["v"])


async def test_text_and_the_typed_output_reach_the_validator() -> None:
    seen: list[Any] = []

    @output_validator
    async def record(text: str, output: Invoice) -> None:
        seen.extend([text, output])

    await record.check(
        FinalAnswer(text='{"total": 3}', structured=True, structured_output={"total": 3})
    )

    assert seen == ['{"total": 3}', Invoice(total=3)]


async def test_an_untyped_output_is_the_json_value_as_it_is() -> None:
    seen: list[Any] = []

    @output_validator
    def record(output) -> None:  # type: ignore[no-untyped-def]
        seen.append(output)

    await record.check(FinalAnswer(text="[1]", structured=True, structured_output=[1]))

    assert seen == [[1]]


async def test_an_output_that_does_not_fit_the_type_is_rejected_for_the_model() -> None:
    @output_validator
    def needs_invoice(output: Invoice) -> None: ...

    answer = FinalAnswer(text="{}", structured=True, structured_output={"total": "many"})
    with pytest.raises(OutputRejected, match="does not fit Invoice"):
        await needs_invoice.check(answer)


async def test_reading_output_without_a_schema_is_the_applications_fault() -> None:
    @output_validator
    def needs_invoice(output: Invoice) -> None: ...

    with pytest.raises(OutputValidatorFailure, match="has no output_schema"):
        await needs_invoice.check(FinalAnswer(text="plain"))


async def test_any_other_exception_is_a_failure_naming_the_validator() -> None:
    @output_validator
    def broken(text: str) -> None:
        raise ZeroDivisionError("oops")

    with pytest.raises(OutputValidatorFailure, match="'broken' raised ZeroDivisionError: oops"):
        await broken.check(FinalAnswer(text="x"))


def test_the_registry_refuses_a_plain_function_and_a_second_name() -> None:
    def plain(text: str) -> None: ...

    with pytest.raises(TypeError, match=r"decorate it with @turnkeeper\.output_validator"):
        OutputValidators([plain])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="named 'plain' is already given"):
        OutputValidators([output_validator(plain), output_validator(plain)])


def test_a_validator_given_as_a_tool_says_where_it_belongs(tmp_path: Any) -> None:
    settings = Settings(task_queue="q", workspace=tmp_path, data_dir=tmp_path, store_dir=tmp_path)
    validator = output_validator(lambda text: None)

    with pytest.raises(TypeError, match=r"output validator, not a tool: give it as output_valid"):
        tool_registry(settings, [validator], builtin=False)  # type: ignore[list-item]
