"""A fresh workspace per test, the built-in tools bound to it, and a folder beside it that
stands for the outside: nothing the tools do may read or change it."""

from __future__ import annotations

from pathlib import Path

import pytest
from turnkeeper.activities.tools.registry import ToolRegistry
from turnkeeper.activities.tools.workspace import Workspace, builtin_tools

from tests.unit.activities.tools.tool_calls import SECRET


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(SECRET)
    return folder


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "workspace"


@pytest.fixture
def tools(root: Path) -> ToolRegistry:
    return builtin_tools(Workspace(root), max_read_bytes=64)
