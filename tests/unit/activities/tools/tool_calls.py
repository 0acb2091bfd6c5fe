"""Calling a built-in tool as the model does (arguments validated, errors as ToolError)."""

from __future__ import annotations

from pathlib import Path

import pytest
from turnkeeper.activities.tools.registry import ToolError, ToolRegistry, run_tool

SECRET = "top secret, outside the workspace"


async def call(tools: ToolRegistry, name: str, /, **arguments: str) -> str:
    tool = tools.get(name)
    assert tool is not None
    return await run_tool(tool, arguments)


async def refused(tools: ToolRegistry, name: str, /, **arguments: str) -> str:
    """The error a call ends with, as the model reads it."""
    with pytest.raises(ToolError) as caught:
        await call(tools, name, **arguments)
    return str(caught.value)


def names_in(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())
