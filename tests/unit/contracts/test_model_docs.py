"""Every public model says what it is and what each of its fields means, where `help()`, an IDE
and JSON Schema read it: a class docstring, and a docstring under each field (which
`ContractModel` turns into the field's JSON Schema `description`). The models its fields use,
nested at any depth, and every other model of contracts/ are held to the same."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pytest
from pydantic import BaseModel
from turnkeeper.contracts.contract_model import ContractModel

import turnkeeper
from turnkeeper import contracts


def _public_models() -> dict[str, type[BaseModel]]:
    """The models of `turnkeeper.__all__`, by the name they are exported under."""
    exported = {name: getattr(turnkeeper, name) for name in turnkeeper.__all__}
    return {
        name: value
        for name, value in exported.items()
        if isinstance(value, type) and issubclass(value, BaseModel)
    }


def _contracts_models() -> dict[str, type[BaseModel]]:
    """Every model defined in a module of contracts/."""
    found: dict[str, type[BaseModel]] = {}
    for module_info in pkgutil.iter_modules(contracts.__path__):
        module = importlib.import_module(f"{contracts.__name__}.{module_info.name}")
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
MODELS = _contracts_models()


def _undocumented(schema: dict[str, Any]) -> list[str]:
    """What a model's JSON Schema leaves without a description: the model, or its fields."""
    if "$ref" in schema:  # a recursive model (sub-agents hold agents) refers into its $defs
        schema = schema["$defs"][schema["$ref"].rsplit("/", 1)[-1]]
    missing = [] if schema.get("description", "").strip() else ["(docstring)"]
    return missing + [
        field
        for field, property_schema in schema["properties"].items()
        if not property_schema.get("description", "").strip()
    ]


def test_every_public_model_is_one_of_contracts() -> None:
    # `Agent`, `Task` and `Compaction` are exported under other names than their classes'.
    assert len(PUBLIC) >= 16
    assert [name for name, model in PUBLIC.items() if model not in MODELS.values()] == []


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_a_public_models_schema_describes_it_and_every_field_at_any_depth(name: str) -> None:
    schema = PUBLIC[name].model_json_schema()
    nested = {key: model for key, model in schema.get("$defs", {}).items() if "properties" in model}
    undocumented = {
        model_name: missing
        for model_name, model_schema in {name: schema, **nested}.items()
        if (missing := _undocumented(model_schema))
    }
    assert undocumented == {}
    if name == "TurnRequest":  # nested two levels down: TurnRequest.agent.approvers
        assert "Approver" in nested


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_model_of_contracts_derives_from_contract_model(name: str) -> None:
    # Without ContractModel's configuration, the docstrings under its fields reach no schema.
    assert issubclass(MODELS[name], ContractModel)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_model_of_contracts_has_a_class_docstring(name: str) -> None:
    docstring = MODELS[name].__doc__  # never inherited: None when the class has none
    assert docstring and docstring.strip(), f"{name} has no docstring"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_model_of_contracts_describes_every_field(name: str) -> None:
    assert _undocumented(MODELS[name].model_json_schema()) == []
