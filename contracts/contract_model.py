"""`ContractModel`, the base of every model in contracts: the configuration they all share."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ContractModel(BaseModel):
    """A pydantic model of the contract, documented where it is declared.

    The string under a field is that field's documentation: pydantic reads it into the field's
    `description` when the class is built, so the same words reach `model_fields`, JSON Schema
    and an IDE's hover. It changes the schema only, never validation or serialization, so the
    JSON of these models in workflow histories stays the same. Reading it costs each class one
    look at its own source, once per process (a worker passes contracts through its sandbox).
    """

    model_config = ConfigDict(use_attribute_docstrings=True)
