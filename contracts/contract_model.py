"""`ContractModel`, the base of every model in contracts: the configuration they all share."""

from __future__ import annotations

import ast
import inspect
import sys
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict


class ContractModel(BaseModel):
    """A pydantic model of the contract, documented where it is declared.

    The string under a field is that field's documentation: it becomes the field's
    `description` when the class is built, so the same words reach `model_fields`, JSON Schema
    and an IDE's hover. It changes the schema only, never validation or serialization, so the
    JSON of these models in workflow histories stays the same.

    Hand-written, not pydantic's `use_attribute_docstrings`: that one finds each class's source
    by walking the interpreter's frames, a fifth of the CPU every process (a worker, each
    `turnkeeper` command) spent on starting. Here each module's source is parsed once. And a
    model's validator is built at its first use (`defer_build`), not at import: a command uses
    a handful of the contract's models (`build_all` builds them at once where that is better).
    """

    model_config = ConfigDict(defer_build=True)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        # Before the deferred build: the schema, JSON Schema included, is made from these.
        documented = _attribute_docstrings(cls.__module__, cls.__qualname__)
        for name, field in cls.__pydantic_fields__.items():
            if field.description is None and name in documented:
                field.description = documented[name]


def build_all() -> None:
    """Builds every contract model not built yet, and stops deferring them. For a web framework
    that wraps models in its own annotations (FastAPI's `Body(alias=…)`) and builds its type
    adapters where it silences pydantic's warning about those: a deferred model's adapter
    (deferred with it) would be built at the first request instead, and warn there."""
    pending: list[type[ContractModel]] = [ContractModel]
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        model.model_config["defer_build"] = False
        if model is not ContractModel and not model.__pydantic_complete__:
            model.model_rebuild()


@cache
def _module_tree(module: str) -> ast.Module | None:
    try:
        source = inspect.getsource(sys.modules[module])
    except (KeyError, OSError, TypeError):  # no module or no source: no descriptions
        return None
    return ast.parse(source)


def _attribute_docstrings(module: str, qualname: str) -> dict[str, str]:
    """The string under each annotated attribute of class `qualname` of `module`, as pydantic's
    `use_attribute_docstrings` reads it (`<locals>` classes have none)."""
    tree = _module_tree(module)
    node: ast.AST | None = tree
    for part in qualname.split("."):
        body = getattr(node, "body", [])
        node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if node is None:
            return {}
    assert isinstance(node, ast.ClassDef)
    found: dict[str, str] = {}
    for before, statement in zip(node.body, node.body[1:], strict=False):
        if (
            isinstance(before, ast.AnnAssign)
            and isinstance(before.target, ast.Name)
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            found[before.target.id] = inspect.cleandoc(statement.value.value)
    return found
