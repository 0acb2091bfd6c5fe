"""`SkillCatalog`: the skills one worker serves, and why any other it was given is unavailable.

Built once at worker start from the skills folder and the skills defined in Python. Every
problem is logged there, once, and kept: a turn that names a broken skill is refused with the
reason rather than with a bare "no such skill".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from turnkeeper.activities.skills.skill import Skill
from turnkeeper.activities.skills.skill_file import SkillProblem, read_skills_dir
from turnkeeper.contracts.skill_io import DescribeSkillsInput, DescribeSkillsResult, SkillInfo

from turnkeeper.ground.logs import get_logger

log = get_logger(__name__)


class SkillUnavailable(Exception):
    """A turn's `agent.skills` cannot be served; the message names the skill and says why."""


class SkillCatalog:
    """The skills of one worker, by name.

    Args:
        skills: The usable skills (names must be distinct).
        problems: The skills the worker was given but cannot serve.
    """

    def __init__(self, skills: Iterable[Skill] = (), problems: Iterable[SkillProblem] = ()) -> None:
        self._skills = {skill.name: skill for skill in skills}
        self._problems = {problem.name: problem for problem in problems}

    @classmethod
    def load(
        cls,
        folder: Path | None,
        skills: Sequence[Skill] = (),
        *,
        worker_tools: Iterable[str] = (),
    ) -> SkillCatalog:
        """The catalog of a worker: the skills of `folder` (`TURNKEEPER_SKILLS_DIR`) and those
        defined in Python, each problem logged once as a warning.

        Args:
            folder: The skills folder; None: none.
            skills: `run_worker(skills=[…])`.
            worker_tools: The worker's tool names: a skill bringing any other tool is unavailable.

        Raises:
            SkillsDirError: `folder` cannot be read.
            TypeError: Something in `skills` is not a `turnkeeper.Skill`.
            ValueError: A skill defined in Python has the name of another skill.
        """
        read = read_skills_dir(folder) if folder is not None else None
        from_folder = list(read.skills) if read else []
        problems = list(read.problems) if read else []
        taken = {skill.name: str(skill.folder) for skill in from_folder}
        taken |= {p.name: str(p.folder) for p in problems if p.folder is not None}
        for skill in skills:
            if not isinstance(skill, Skill):
                raise TypeError(f"{skill!r} is not a skill: give turnkeeper.Skill(…) objects")
            if skill.name in taken:
                where = taken[skill.name] or "another skill defined in Python"
                raise ValueError(f"two skills are named {skill.name!r}: one in Python, and {where}")
            taken[skill.name] = ""
        tools = set(worker_tools)
        usable: list[Skill] = []
        for skill in [*from_folder, *skills]:
            missing = [name for name in skill.tools if name not in tools]
            if missing:
                problems.append(_missing_tools(skill, missing, tools))
            else:
                usable.append(skill)
        for problem in problems:
            log.warning(
                "skill unavailable",
                skill=problem.name,
                folder=str(problem.folder) if problem.folder else None,
                problem=problem.reason,
            )
        if usable:
            log.info("skills installed", skills=sorted(skill.name for skill in usable))
        return cls(usable, problems)

    def __len__(self) -> int:
        return len(self._skills)

    def names(self) -> list[str]:
        return sorted(self._skills)

    def get(self, name: str) -> Skill | None:
        return self._skills.get(name)

    def require(self, name: str) -> Skill:
        """The skill `name`.

        Raises:
            SkillUnavailable: The worker lacks it, or has it broken; the message says which.
        """
        skill = self._skills.get(name)
        if skill is not None:
            return skill
        problem = self._problems.get(name)
        if problem is not None:
            return _raise(f"the skill {name!r} is unavailable on this worker: {problem.reason}")
        known = ", ".join(self.names()) or "none"
        return _raise(f"this worker has no skill {name!r} (it has: {known})")

    def describe(self, request: DescribeSkillsInput) -> DescribeSkillsResult:
        """What the turn needs of each skill it names, in order.

        Raises:
            SkillUnavailable: A skill is missing or broken, or a tool would come from two
                places (two skills, or a skill and the agent itself): never a silent shadow.
        """
        brought_by: dict[str, str] = {}
        agent_tools = set(request.agent_tools)
        infos: list[SkillInfo] = []
        for ref in request.skills:
            skill = self.require(ref.name)
            for tool in skill.tools:
                if tool in agent_tools:
                    _raise(
                        f"the skill {skill.name!r} brings the tool {tool!r}, which the agent has "
                        "already; a tool comes from one place only: drop it from the agent"
                    )
                other = brought_by.setdefault(tool, skill.name)
                if other != skill.name:
                    _raise(
                        f"the skills {other!r} and {skill.name!r} both bring the tool {tool!r}; "
                        "a tool comes from one place only"
                    )
            infos.append(
                SkillInfo(
                    name=skill.name,
                    description=skill.description,
                    tools=list(skill.tools),
                    instructions=skill.instructions if ref.always else None,
                )
            )
        return DescribeSkillsResult(skills=infos)


def _missing_tools(skill: Skill, missing: list[str], tools: set[str]) -> SkillProblem:
    known = ", ".join(sorted(tools)) or "none"
    return SkillProblem(
        skill.name,
        f"it brings the tool(s) {', '.join(map(repr, missing))}, which this worker does not "
        f"have (its tools: {known})",
        skill.folder,
    )


def _raise(message: str) -> Skill:
    raise SkillUnavailable(f"agent.skills: {message}")
