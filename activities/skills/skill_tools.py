"""The built-in tools `load_skill` and `read_skill_file`, offered to agents with skills.

Both only read, and read the same thing each time (a changed skill on disk is a new worker
deployment), so they are idempotent. What they return is a tool result in the turn's history:
replay never reads a skill's folder again. `read_skill_file` reads through a `Workspace` rooted at
the skill's folder, so it is confined there exactly as the workspace tools are to theirs.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from turnkeeper.activities.skills.catalog import SkillCatalog
from turnkeeper.activities.skills.skill import Skill
from turnkeeper.activities.skills.skill_file import resource_files
from turnkeeper.activities.tools.registry import ToolError, WorkerTool, worker_tool
from turnkeeper.activities.tools.workspace import Workspace
from turnkeeper.contracts.skills import LOAD_SKILL_TOOL, READ_SKILL_FILE_TOOL

SkillName = Annotated[str, Field(description="The skill's name, as the list of skills gives it.")]
SkillPath = Annotated[
    str, Field(description="A file path relative to the skill's folder, e.g. 'limits.md'.")
]


def skill_tools(catalog: SkillCatalog, *, max_read_bytes: int = 256 * 1024) -> list[WorkerTool]:
    """`load_skill` and `read_skill_file` over `catalog`'s skills (any skill it serves: the
    turn checks that its model loads only the skills its agent names).

    Args:
        max_read_bytes: read_skill_file shows at most this much of a file, with a marker.
    """
    # One confined view per folder, built once: each resolves its root when made.
    folders = {
        name: Workspace(skill.folder, kind="skill folder")
        for name in catalog.names()
        if (skill := catalog.get(name)) is not None and skill.folder is not None
    }

    @worker_tool(name=LOAD_SKILL_TOOL)
    def load_skill(name: SkillName) -> str:
        """Load a skill's instructions: do it before a task the skill's description covers."""
        skill = _skill(catalog, name)
        text = f"Instructions of the skill '{skill.name}':\n\n{skill.instructions}"
        if skill.folder is not None and (files := resource_files(skill.folder)):
            text += f"\n\nFiles of this skill ({READ_SKILL_FILE_TOOL} reads them): " + ", ".join(
                files
            )
        return text

    @worker_tool(
        name=READ_SKILL_FILE_TOOL,
        description=(
            "Read a UTF-8 text file of a skill's folder (one its instructions mention). A file "
            f"over {max_read_bytes} bytes is cut off, with a marker giving its full size."
        ),
    )
    def read_skill_file(name: SkillName, path: SkillPath) -> str:
        skill = _skill(catalog, name)
        folder = folders.get(skill.name)
        if folder is None:
            raise ToolError(f"the skill '{skill.name}' is defined in code and has no files")
        return folder.read_text(path, max_read_bytes)

    return [load_skill, read_skill_file]


def _skill(catalog: SkillCatalog, name: str) -> Skill:
    skill = catalog.get(name)
    if skill is None:
        known = ", ".join(catalog.names()) or "none"
        raise ToolError(f"there is no skill named '{name}' (the skills are: {known})")
    return skill
