"""Typed output: a pydantic model as a turn's `agent.output_schema`, and the report's
`structured_output` read back as that model.

The schema is made strict the way OpenAI's and Anthropic's strict structured output want it:
every object closed (`additionalProperties: false`) and every property required (an optional
field is still sent, as null or a value). A type that cannot be put so is refused here, before
anything starts, naming the field: an object with free-form keys (`dict[str, X]`, `extra="allow"`)
or a value of any type (`Any`).
"""

from __future__ import annotations

import inspect
from typing import Any, Final, TypeVar

from pydantic import BaseModel, JsonValue

from turnkeeper.contracts.turn import AgentReport

Output = TypeVar("Output", bound=BaseModel)

# Keywords that hold one subschema, or a list of them, to walk into.
_SUBSCHEMA: Final = ("items", "not", "contains")
_SUBSCHEMAS: Final = ("anyOf", "allOf", "prefixItems")
# Pydantic's annotations for people, which a strict schema does not need: a title repeats the
# name, and a default never applies once every property is required.
_DROPPED: Final = ("title", "default")
_SCHEMA_KEYWORDS: Final = ("type", "$ref", "anyOf", "allOf", "oneOf", "enum", "const")


def output_schema(output_type: type[BaseModel]) -> dict[str, JsonValue]:
    """The strict JSON Schema of `output_type`, for `agent.output_schema`.

    Raises:
        TypeError: `output_type` is not a pydantic model class, or a field of it cannot be put
            strictly (the message names the field and says what to use instead).
    """
    if not (inspect.isclass(output_type) and issubclass(output_type, BaseModel)):
        raise TypeError(f"output_type must be a pydantic BaseModel class, not {output_type!r}")
    schema = output_type.model_json_schema()
    # A recursive model's schema is a reference to its own definition.
    root = schema["$defs"][schema["$ref"].rsplit("/", 1)[-1]] if "$ref" in schema else schema
    if root.get("type") != "object":
        raise TypeError(
            f"output_type {output_type.__name__}: its JSON Schema must be an object (a root "
            "model is not): wrap the value in a field"
        )
    return _strict(schema, output_type.__name__)


def structured(report: AgentReport, output_type: type[Output]) -> Output:
    """The report's `structured_output` as `output_type`.

    Raises:
        ValueError: The turn ended without a structured answer (its outcome was `max_tokens`,
            or its agent had no `output_schema`).
        pydantic.ValidationError: The answer fits the schema but not the type's own validators.
    """
    if report.structured_output is None:
        raise ValueError(
            f"the turn ended ({report.outcome}) without a structured answer: its agent had no "
            "output_schema, or the answer was cut short by max_tokens"
        )
    return output_type.model_validate(report.structured_output)


def _strict(schema: dict[str, Any], where: str) -> dict[str, Any]:
    if not any(keyword in schema for keyword in _SCHEMA_KEYWORDS):
        raise TypeError(
            f"output_type: {where} may hold a value of any type, which strict structured output "
            "cannot describe: give it a type"
        )
    strict = {key: value for key, value in schema.items() if key not in _DROPPED}
    if "oneOf" in strict:  # a discriminated union; strict output knows only anyOf
        strict["anyOf"] = strict.pop("oneOf")
    if "$defs" in strict:
        strict["$defs"] = {
            name: _strict(sub, f"{where} ({name})") for name, sub in strict["$defs"].items()
        }
    if strict.get("type") == "object":
        _close(strict, where)
    for keyword in _SUBSCHEMA:
        if isinstance(strict.get(keyword), dict):
            strict[keyword] = _strict(strict[keyword], f"{where}[]")
    for keyword in _SUBSCHEMAS:
        if isinstance(strict.get(keyword), list):
            strict[keyword] = [_strict(sub, where) for sub in strict[keyword]]
    return strict


def _close(schema: dict[str, Any], where: str) -> None:
    """Makes an object schema closed with every property required, or refuses it."""
    extra = schema.get("additionalProperties")
    if extra not in (None, False) or "patternProperties" in schema:
        raise TypeError(
            f"output_type: {where} is an object with free-form keys (a dict, or a model with "
            'extra="allow"), which strict structured output cannot describe: use a model with '
            "named fields, or a list of key/value models"
        )
    properties = schema.get("properties", {})
    schema["properties"] = {
        name: _strict(sub, f"{where}.{name}") for name, sub in properties.items()
    }
    schema["required"] = list(properties)
    schema["additionalProperties"] = False
