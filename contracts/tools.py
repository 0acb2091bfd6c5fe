"""How a tool is described to the model."""

from __future__ import annotations

from typing import Final

from pydantic import Field, JsonValue
from turnkeeper.contracts.contract_model import ContractModel

# The built-in write_file's cap on what it writes (`TURNKEEPER_MAX_WRITE_BYTES`): the model
# writes the content, and a prompt injection can make it write to fill the worker's disk.
DEFAULT_MAX_WRITE_BYTES: Final = 1024 * 1024


class ToolDefinition(ContractModel):
    """A tool as the model is offered it."""

    name: str
    """The name the model calls it by."""
    description: str = ""
    """What the model reads about the tool."""
    input_schema: dict[str, JsonValue] = Field(default_factory=lambda: {"type": "object"})
    """The JSON Schema of its arguments."""
