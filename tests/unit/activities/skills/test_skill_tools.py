"""`load_skill` and `read_skill_file` as the model calls them: the instructions, a resource
file, and model-readable refusals; `read_skill_file` never leaves the skill's folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from turnkeeper.activities.skills.catalog import SkillCatalog
from turnkeeper.activities.skills.skill import Skill
from turnkeeper.activities.skills.skill_tools import skill_tools
from turnkeeper.activities.tools.registry import ToolRegistry

from tests.unit.activities.skills.skill_folders import REFUND_POLICY, skill_folder
from tests.unit.activities.tools.tool_calls import SECRET, call, refused

TONE = Skill("tone", "How we write to customers.", "Be brief and kind.")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    (tmp_path / "secret.txt").write_text(SECRET)
    return tmp_path / "secret.txt"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return skill_folder(
        tmp_path / "skills", "refund-policy", REFUND_POLICY, **{"limits.md": "EU: 500 EUR"}
    )


@pytest.fixture
def tools(folder: Path) -> ToolRegistry:
    catalog = SkillCatalog.load(folder.parent, [TONE], worker_tools=["refund"])
    return ToolRegistry(skill_tools(catalog, max_read_bytes=64))


async def test_load_skill_returns_the_instructions_and_names_the_files(tools: ToolRegistry) -> None:
    assert await call(tools, "load_skill", name="refund-policy") == (
        "Instructions of the skill 'refund-policy':\n\n"
        "Refund at most the order's total. Read limits.md for the per-country caps.\n\n"
        "Files of this skill (read_skill_file reads them): limits.md"
    )
    assert await call(tools, "load_skill", name="tone") == (
        "Instructions of the skill 'tone':\n\nBe brief and kind."
    )


async def test_an_unknown_skill_is_refused_listing_the_skills(tools: ToolRegistry) -> None:
    for tool, arguments in [("load_skill", {}), ("read_skill_file", {"path": "limits.md"})]:
        message = await refused(tools, tool, name="returns", **arguments)
        assert message == "there is no skill named 'returns' (the skills are: refund-policy, tone)"


async def test_read_skill_file_reads_a_resource_and_caps_it(
    tools: ToolRegistry, folder: Path
) -> None:
    assert await call(tools, "read_skill_file", name="refund-policy", path="limits.md") == (
        "EU: 500 EUR"
    )
    (folder / "long.md").write_text("x" * 100)
    text = await call(tools, "read_skill_file", name="refund-policy", path="long.md")
    assert text.startswith("x" * 64) and "[truncated: showing the first 64 of 100 bytes" in text


async def test_a_skill_defined_in_code_has_no_files(tools: ToolRegistry) -> None:
    message = await refused(tools, "read_skill_file", name="tone", path="notes.md")
    assert message == "the skill 'tone' is defined in code and has no files"


async def test_a_missing_file_is_named(tools: ToolRegistry) -> None:
    message = await refused(tools, "read_skill_file", name="refund-policy", path="nope.md")
    assert message == "'nope.md' does not exist"


@pytest.mark.parametrize("path", ["../../secret.txt", "../refund-policy/../../secret.txt"])
async def test_a_relative_path_out_of_the_folder_is_refused(tools: ToolRegistry, path: str) -> None:
    message = await refused(tools, "read_skill_file", name="refund-policy", path=path)
    assert message.startswith(f"'{path}' leads outside the skill folder;")
    assert SECRET not in message


async def test_an_absolute_path_is_refused(tools: ToolRegistry, outside: Path) -> None:
    message = await refused(tools, "read_skill_file", name="refund-policy", path=str(outside))
    assert "leads outside the skill folder" in message


async def test_a_symlink_out_of_the_folder_is_refused(
    tools: ToolRegistry, folder: Path, outside: Path
) -> None:
    (folder / "escape.md").symlink_to(outside)
    os.link(outside, folder / "hard.md")

    message = await refused(tools, "read_skill_file", name="refund-policy", path="escape.md")
    assert message.startswith("'escape.md' leads outside the skill folder through a symbolic link")
    message = await refused(tools, "read_skill_file", name="refund-policy", path="hard.md")
    assert "hard links" in message


def test_both_tools_are_read_only_and_idempotent(tools: ToolRegistry) -> None:
    for name in ("load_skill", "read_skill_file"):
        tool = tools.get(name)
        assert tool is not None and tool.idempotent and not tool.requires_approval
