"""Skills: bundles of instructions (and the worker tools they bring) that an agent sees by name
and description and loads only when a task needs them.

The operator installs skills on the worker (`TURNKEEPER_SKILLS_DIR`, a folder per skill with a
`SKILL.md`; or `run_worker(skills=[turnkeeper.Skill(…)])`); a request names the ones its agent
may use (`agent.skills`). Skills are trusted text, like the system prompt they are listed in;
what the model reads of one (`load_skill`, `read_skill_file`) is a tool result in the turn's
history, so replay never reads the folder again.
"""

from __future__ import annotations

from typing import Final

from pydantic import ConfigDict, Field
from turnkeeper.contracts.contract_model import ContractModel

SKILLS_DIR_ENV: Final = "TURNKEEPER_SKILLS_DIR"
SKILL_FILE: Final = "SKILL.md"
# The built-in tools every agent with skills is offered.
LOAD_SKILL_TOOL: Final = "load_skill"
READ_SKILL_FILE_TOOL: Final = "read_skill_file"
SKILL_TOOLS: Final = (LOAD_SKILL_TOOL, READ_SKILL_FILE_TOOL)
# The field's format for a skill's name: lowercase letters, digits and single hyphens.
SKILL_NAME_PATTERN: Final = r"^[a-z0-9]+(-[a-z0-9]+)*$"
SKILL_NAME_MAX: Final = 64


class SkillRef(ContractModel):
    """An entry of `agent.skills` in its long form (the short form is the name alone)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=SKILL_NAME_MAX, pattern=SKILL_NAME_PATTERN)
    """The skill's name, as its `SKILL.md` front matter (or `turnkeeper.Skill`) gives it."""
    always: bool = False
    """True: its instructions are appended to the system prompt at the start, in the order of
    `agent.skills`, instead of waiting for `load_skill`."""
