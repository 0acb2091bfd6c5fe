"""What crosses the `describe_skills` activity: at the start of a turn with `agent.skills`, the
worker says what each named skill is (its description, the tools it brings, and the
instructions of those always loaded), and refuses, naming the skill, one it lacks or whose
tools clash. The workflow keeps the answer in its state, so later calls never ask again."""

from __future__ import annotations

from pydantic import Field
from turnkeeper.contracts.activity_io import CompactModel
from turnkeeper.contracts.skills import SkillRef


class DescribeSkillsInput(CompactModel):
    """The `describe_skills` activity's input."""

    skills: list[SkillRef] = Field(default_factory=list)
    """`agent.skills`, each in its long form, in the request's order."""
    agent_tools: list[str] = Field(default_factory=list)
    """Tool names the agent has without its skills (its tools, external tools and
    sub-agents): a skill that brings one of them is refused, never shadowed."""


class SkillInfo(CompactModel):
    """What the turn needs of one skill."""

    name: str
    """The skill's name."""
    description: str
    """What the model reads in the system prompt's list of skills: when to load it."""
    tools: list[str] = Field(default_factory=list)
    """Worker tools the skill brings: they join the agent's toolset."""
    instructions: str | None = None
    """The skill's instructions, only for an `always` skill (appended to the system prompt);
    None: the model loads them with `load_skill`."""


class DescribeSkillsResult(CompactModel):
    """The `describe_skills` activity's result, in the order of `agent.skills`."""

    skills: list[SkillInfo] = Field(default_factory=list)
    """Each named skill."""
