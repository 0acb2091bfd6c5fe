"""`start_turn(output_type=…)`: a pydantic model as a strict `output_schema`, the types strict
output cannot describe refused, and the report's answer read back as the model."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from turnkeeper.contracts.turn import AgentReport
from turnkeeper.workflows.answer.structured_output import structured_answer

import turnkeeper
from turnkeeper.client.typed_output import output_schema, structured


class Line(BaseModel):
    sku: str
    quantity: int = Field(description="How many.")


class Invoice(BaseModel):
    customer: str
    lines: list[Line]
    note: str | None = None
    status: Literal["draft", "sent"] = "draft"

    @field_validator("lines")
    @classmethod
    def _some(cls, lines: list[Line]) -> list[Line]:
        if not lines:
            raise ValueError("an invoice has lines")
        return lines


class Tree(BaseModel):
    name: str
    children: list[Tree] = []


def _objects(schema: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            found.append(schema)
        for value in schema.values():
            found += _objects(value)
    elif isinstance(schema, list):
        for value in schema:
            found += _objects(value)
    return found


@pytest.mark.parametrize("model", [Invoice, Tree])
def test_every_object_is_closed_with_every_property_required(model: type[BaseModel]) -> None:
    schema = output_schema(model)

    objects = _objects(schema)
    assert objects
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    assert "title" not in str(schema) and "default" not in str(schema)


def test_the_schema_checks_answers_as_the_turn_does() -> None:
    schema = output_schema(Invoice)
    good = '{"customer": "Ada", "lines": [{"sku": "x", "quantity": 1}], "note": null, '
    good += '"status": "sent"}'

    assert structured_answer(good, schema)[1] is None
    _, correction = structured_answer('{"customer": "Ada", "lines": []}', schema)
    assert correction is not None and "'note' is a required property" in correction


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str


class Tagged(BaseModel):
    tags: dict[str, int]


class Anything(BaseModel):
    value: Any


@pytest.mark.parametrize(
    ("model", "problem"),
    [
        (Loose, "Loose is an object with free-form keys"),
        (Tagged, "Tagged.tags is an object with free-form keys"),
        (Anything, "Anything.value may hold a value of any type"),
        (dict, "must be a pydantic BaseModel class"),
    ],
)
def test_a_type_strict_output_cannot_describe_is_refused_naming_the_field(
    model: Any, problem: str
) -> None:
    with pytest.raises(TypeError, match=problem):
        output_schema(model)


def _report(value: Any, outcome: str = "completed") -> AgentReport:
    return AgentReport(agent_id="a", task_id="t", outcome=outcome, structured_output=value)  # type: ignore[arg-type]


def test_the_answer_is_read_back_as_the_model() -> None:
    value = {
        "customer": "Ada",
        "lines": [{"sku": "x", "quantity": 2}],
        "note": None,
        "status": "sent",
    }

    assert structured(_report(value), Invoice).lines[0].quantity == 2


def test_no_structured_answer_and_a_failing_validator_are_errors() -> None:
    with pytest.raises(ValueError, match=r"ended \(max_tokens\) without a structured answer"):
        structured(_report(None, "max_tokens"), Invoice)
    value = {"customer": "Ada", "lines": [], "note": None, "status": "sent"}
    with pytest.raises(ValidationError, match="an invoice has lines"):
        structured(_report(value), Invoice)


class _NoClient:
    """Stands for a client: these mistakes are refused before anything is sent."""


NO_CLIENT: Any = _NoClient()
AGENT = {"id": "a", "model": "anthropic:claude-sonnet-4-6"}
TASK = {"id": "t", "input": "go"}


async def test_start_turn_refuses_a_type_it_cannot_make_strict_before_sending() -> None:
    with pytest.raises(TypeError, match=r"Tagged\.tags is an object with free-form keys"):
        await turnkeeper.start_turn(NO_CLIENT, agent=AGENT, task=TASK, output_type=Tagged)


async def test_start_turn_refuses_an_output_type_beside_an_output_schema() -> None:
    agent = {**AGENT, "output_schema": {"type": "object"}}

    with pytest.raises(TypeError, match=r"output_type or agent\.output_schema, not both"):
        await turnkeeper.start_turn(NO_CLIENT, agent=agent, task=TASK, output_type=Invoice)


async def test_output_needs_a_type_from_start_turn_or_its_argument() -> None:
    handle = turnkeeper.TurnHandle(NO_CLIENT, NO_CLIENT)

    with pytest.raises(TypeError, match=r"give one, handle\.output\(SomeModel\)"):
        await handle.output()
