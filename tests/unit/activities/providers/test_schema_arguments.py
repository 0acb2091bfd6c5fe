"""Arguments made from a tool's JSON Schema for the offline `demo:tool-caller` model: the schemas
that `@turnkeeper.tool` writes from type hints (pydantic's, with `$defs`, `anyOf` for optionals,
enums and constraints) give arguments that the same tool's own validation accepts."""

from __future__ import annotations

from datetime import date
from enum import Enum
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field, TypeAdapter
from turnkeeper.activities.providers.schema_arguments import MAX_DEPTH, STRING, arguments_for

import turnkeeper


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str
    zip_code: Annotated[str, Field(min_length=5, max_length=5)]
    note: str = "leave at the door"


class Parcel(BaseModel):
    to: Address
    weight_kg: Annotated[float, Field(gt=0, le=0.5)]
    fragile: bool
    colours: list[Colour]


@turnkeeper.tool
async def ship(
    parcel: Parcel,
    copies: Annotated[int, Field(ge=3, multiple_of=2)],
    speed: Literal["slow", "fast"],
    on: date,
    tags: Annotated[list[str], Field(min_length=2)],
    insured: bool = False,
    memo: str | None = None,
) -> str:
    """Ship a parcel."""
    return "shipped"


def test_every_required_argument_of_a_typed_tool_is_made_and_the_tool_accepts_them() -> None:
    schema = ship.input_schema()
    arguments = arguments_for(schema)
    assert arguments == {
        "parcel": {
            "to": {"street": STRING, "zip_code": "examp"},
            "weight_kg": 0.5,
            "fragile": True,
            "colours": ["red"],
        },
        "copies": 4,
        "speed": "slow",
        "on": "2026-01-01",
        "tags": [STRING, STRING],
    }
    # The schema's own reading of them: what the tool's arguments check does before a call.
    assert TypeAdapter(Parcel).validate_python(arguments["parcel"]).to.note == "leave at the door"


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "string", "const": "only"}, "only"),
        ({"type": "string", "default": "usual"}, "usual"),
        ({"type": "string", "examples": ["1042", "1043"]}, "1042"),
        ({"type": "integer", "enum": [7, 9]}, 7),
        ({"type": "number", "exclusiveMinimum": 2}, 2.5),
        ({"type": "integer", "exclusiveMaximum": 0}, -1),
        ({"type": "string", "format": "email"}, "user@example.com"),
        ({"type": "string", "minLength": 9}, "examplexx"),
        ({"type": ["null", "boolean"]}, True),
        ({"type": "null"}, None),
        ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}, [1, STRING]),
        ({"type": "array", "items": {"type": "integer"}, "maxItems": 0}, []),
        ({"anyOf": [{"type": "null"}, {"type": "integer"}]}, 1),
        ({"allOf": [{"type": "integer"}, {"minimum": 5}]}, 5),
        ({}, STRING),
    ],
)
def test_a_property_gets_the_value_its_schema_suggests_or_a_plain_one_within_bounds(
    schema: dict, value: object
) -> None:
    made = arguments_for({"type": "object", "properties": {"x": schema}, "required": ["x"]})
    assert made == {"x": value}


def test_an_input_that_is_no_object_gives_no_arguments() -> None:
    assert arguments_for({"type": "string"}) == {}
    assert arguments_for({"type": "object"}) == {}


def test_a_schema_that_refers_to_itself_stops_at_the_depth_limit() -> None:
    node = {"type": "object", "properties": {"child": {"$ref": "#"}}, "required": ["child"]}
    made = arguments_for(node)
    depth = 0
    while isinstance(made, dict):
        made = made["child"]
        depth += 1
    assert made is None and depth == MAX_DEPTH + 1


def test_the_same_schema_gives_the_same_arguments() -> None:
    assert arguments_for(ship.input_schema()) == arguments_for(ship.input_schema())
