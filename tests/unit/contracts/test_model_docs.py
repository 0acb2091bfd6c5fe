"""Every public model says what it is and what each of its fields means, where `help()`, an IDE
and JSON Schema read it: a class docstring, and a docstring under each field (which
`ContractModel` turns into the field's JSON Schema `description`). The models the fields use,
nested at any depth, and every other model of contracts/ are held to the same."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from typing import Any, get_args

import pytest
from pydantic import BaseModel
from turnkeeper.contracts.contract_model import ContractModel

import turnkeeper
from turnkeeper import contracts

CONTRACTS = "turnkeeper.contracts."


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for argument in get_args(annotation):
        yield from _models_in(argument)


def _public_models() -> dict[str, type[BaseModel]]:
    """The models of `turnkeeper.__all__`, and the contracts models their fields use."""
    exported = (getattr(turnkeeper, name) for name in turnkeeper.__all__)
    waiting = [value for value in exported if isinstance(value, type)]
    waiting = [model for model in waiting if issubclass(model, BaseModel)]
    found: dict[str, type[BaseModel]] = {}
    while waiting:
        model = waiting.pop()
        if model.__qualname__ in found:
            continue
        found[model.__qualname__] = model
        for field in model.model_fields.values():
            nested = _models_in(field.annotation)
            waiting.extend(model for model in nested if model.__module__.startswith(CONTRACTS))
    return found


def _contracts_models() -> dict[str, type[BaseModel]]:
    """Every model defined in a module of contracts/."""
    found: dict[str, type[BaseModel]] = {}
    for module_info in pkgutil.iter_modules(contracts.__path__):
        module = importlib.import_module(CONTRACTS + module_info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseModel)
                and value.__module__ == module.__name__
                and value is not ContractModel
            ):
                assert found.setdefault(value.__qualname__, value) is value, "two of one name"
    return found


PUBLIC = _public_models()
MODELS = {**_contracts_models(), **PUBLIC}


def test_the_public_models_and_those_nested_in_them_are_found() -> None:
    # `Agent` and `Task` are exported under other names; Approver and TextBlock are nested two
    # levels down (TurnRequest.agent.approvers, AgentReport.messages[].content[].content).
    assert {"AgentSpec", "TaskSpec", "Approver", "TextBlock", "BudgetLimits"} <= PUBLIC.keys()
    assert len(PUBLIC) >= 25


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_model_of_contracts_derives_from_contract_model(name: str) -> None:
    # Without ContractModel's configuration, the docstrings under its fields reach no schema.
    assert issubclass(MODELS[name], ContractModel)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_model_has_a_class_docstring(name: str) -> None:
    docstring = MODELS[name].__doc__  # never inherited: None when the class has none
    assert docstring and docstring.strip(), f"{name} has no docstring"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_field_of_a_model_has_a_json_schema_description(name: str) -> None:
    schema = MODELS[name].model_json_schema()
    undocumented = [
        field
        for field, property_schema in schema["properties"].items()
        if not property_schema.get("description", "").strip()
    ]
    assert undocumented == [], f"{name}: fields without a docstring"
    assert schema.get("description"), f"{name}: the class docstring is not in its schema"
