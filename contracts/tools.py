"""How a tool is described to the model."""

from __future__ import annotations

from pydantic import BaseModel, Field, JsonValue


class ToolDefinition(BaseModel):
    name: str
    description: str = ""
    input_schema: dict[str, JsonValue] = Field(default_factory=lambda: {"type": "object"})
