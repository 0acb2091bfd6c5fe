"""`turnkeeper.Skill`: one skill, defined in Python or read from a folder's `SKILL.md`.

A skill is trusted text the operator installs: a name and a description the model reads in the
system prompt's list of skills, instructions it loads when a task needs them (`load_skill`), the
worker tools it brings, and, for a skill read from a folder, that folder's other files.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from turnkeeper.contracts.skills import SKILL_NAME_MAX, SKILL_NAME_PATTERN

_NAME = re.compile(SKILL_NAME_PATTERN)


@dataclass(frozen=True)
class Skill:
    """A bundle of instructions (and the worker tools they need) an agent loads on demand.

        refunds = turnkeeper.Skill(
            "refund-policy",
            "How to decide and issue refunds; load it before any refund.",
            "Refund at most the order's total. ...",
            tools=["refund"],
        )
        await turnkeeper.run_worker(tools=[refund], skills=[refunds])

    Attributes:
        name: What `agent.skills` calls it: lowercase letters, digits and single hyphens, at
            most 64 characters (`refund-policy`).
        description: What the model reads in the system prompt: what the skill is for and when
            to load it.
        instructions: What `load_skill` returns (or, for an `always` skill, what is appended to
            the system prompt).
        tools: Names of worker tools (`@turnkeeper.tool`, or the built-in ones) the skill
            brings: they join the toolset of every agent that names the skill.
        folder: The folder a `SKILL.md` skill was read from; `read_skill_file` reads its other
            files. None for a skill defined in Python, which has no files.

    Raises:
        ValueError: The name does not fit the format, the description is empty, or `tools` is
            not a list of tool names.
    """

    name: str
    description: str
    instructions: str
    tools: Sequence[str] = ()
    folder: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _check_name(self.name)
        if not isinstance(self.description, str) or not self.description.strip():
            raise ValueError(f"skill {self.name!r}: the description is empty; say when to use it")
        if not isinstance(self.instructions, str):
            raise ValueError(f"skill {self.name!r}: the instructions must be text")
        # A tuple: the skill is frozen, and a bare string would pass as a list of letters.
        if isinstance(self.tools, str) or not all(isinstance(t, str) and t for t in self.tools):
            raise ValueError(
                f"skill {self.name!r}: tools must be a list of worker tool names, "
                f"got {self.tools!r}"
            )
        object.__setattr__(self, "tools", tuple(self.tools))


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > SKILL_NAME_MAX:
        raise ValueError(
            f"skill name {name!r} does not fit the format: lowercase letters, digits and single "
            f"hyphens, at most {SKILL_NAME_MAX} characters (e.g. 'refund-policy')"
        )
