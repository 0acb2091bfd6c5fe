"""Reading skills from disk: `TURNKEEPER_SKILLS_DIR` holds one folder per skill, each with a
`SKILL.md` whose YAML front matter gives `name`, `description` and optionally `tools`, and whose
body is the instructions.

A folder that is not a usable skill is a `SkillProblem`, not an exception: the worker logs it,
serves the others, and a turn naming it learns why it is unavailable.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml
from turnkeeper.activities.skills.front_matter import FrontMatterRefused, load_front_matter
from turnkeeper.activities.skills.skill import Skill
from turnkeeper.contracts.skills import SKILL_FILE, SKILLS_DIR_ENV

# The front matter's fence, as in Jekyll and the Agent Skills format. Only the fence is found by
# hand (one line each side); what lies between is YAML, read by PyYAML.
_FENCE: Final = "---"


class SkillsDirError(Exception):
    """The skills folder itself cannot be read; the worker cannot start."""


class MalformedSkill(Exception):
    """A `SKILL.md` that is not a usable skill; the message says why.

    Attributes:
        name: The name its front matter gives, when it gives one.
    """

    def __init__(self, reason: str, name: str | None = None) -> None:
        super().__init__(reason)
        self.name = name


@dataclass(frozen=True)
class SkillProblem:
    """A skill the worker cannot serve.

    Attributes:
        name: The skill's name if known (else the folder's): what a turn would call it.
        reason: Why it is unavailable, for the log and for the turn that names it.
        folder: Where it came from; None for a skill defined in Python.
    """

    name: str
    reason: str
    folder: Path | None = None


@dataclass(frozen=True)
class SkillsFolder:
    """What a skills folder holds: the usable skills, and the problems of the others."""

    skills: tuple[Skill, ...] = ()
    problems: tuple[SkillProblem, ...] = ()


def read_skills_dir(root: Path) -> SkillsFolder:
    """Every skill under `root` (one sub-folder each), in the order of their folder names.

    Folders whose names start with a dot are skipped, as are plain files. Two folders giving
    the same name are both refused: which one a turn would get must never be an accident.

    Raises:
        SkillsDirError: `root` is missing, not a folder, or unreadable.
    """
    try:
        folders = sorted(
            entry for entry in root.iterdir() if entry.is_dir() and not entry.name.startswith(".")
        )
    except OSError as err:
        raise SkillsDirError(
            f"{SKILLS_DIR_ENV}: the skills folder {root} cannot be read: {err.strerror or err}"
        ) from None
    found: dict[str, list[Skill]] = defaultdict(list)
    problems: list[SkillProblem] = []
    for folder in folders:
        try:
            skill = read_skill(folder)
        except MalformedSkill as err:
            problems.append(SkillProblem(err.name or folder.name, str(err), folder))
        else:
            found[skill.name].append(skill)
    skills: list[Skill] = []
    for name, same in found.items():
        if len(same) == 1:
            skills.append(same[0])
            continue
        where = " and ".join(str(skill.folder) for skill in same)
        problems += [
            SkillProblem(name, f"two folders name the skill {name!r}: {where}", skill.folder)
            for skill in same
        ]
    return SkillsFolder(tuple(skills), tuple(problems))


def read_skill(folder: Path) -> Skill:
    """The skill in `folder`, from its `SKILL.md`.

    Raises:
        MalformedSkill: No `SKILL.md`, no front matter or front matter that is not a YAML
            mapping or is outside the bounds of `front_matter` (size, anchors, depth), a
            missing or empty name or description, a name not in the format, or `tools` that
            is not a list of names.
    """
    path = folder / SKILL_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MalformedSkill(f"the folder has no {SKILL_FILE}") from None
    except UnicodeDecodeError:
        raise MalformedSkill(f"{SKILL_FILE} is not UTF-8 text") from None
    except OSError as err:
        raise MalformedSkill(f"{SKILL_FILE} cannot be read: {err.strerror or err}") from None
    fields, body = _split_front_matter(text)
    name = fields.get("name")
    known = name if isinstance(name, str) and name else None
    for key in ("name", "description"):
        if not isinstance(fields.get(key), str) or not fields[key].strip():
            raise MalformedSkill(f"the front matter of {SKILL_FILE} gives no {key}", known)
    tools = fields.get("tools", [])
    if not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools):
        raise MalformedSkill(
            f"tools in the front matter of {SKILL_FILE} must be a list of worker tool names, "
            f"got {tools!r}",
            known,
        )
    try:
        return Skill(name, fields["description"].strip(), body, tools, folder=folder)
    except ValueError as err:
        raise MalformedSkill(str(err), known) from None


def _split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter as a mapping, and the body after it."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != _FENCE:
        raise MalformedSkill(f"{SKILL_FILE} does not start with front matter (a '---' line)")
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == _FENCE), None)
    if end is None:
        raise MalformedSkill(f"the front matter of {SKILL_FILE} has no closing '---' line")
    try:
        fields = load_front_matter("".join(lines[1:end]))
    except FrontMatterRefused as err:
        raise MalformedSkill(f"the front matter of {SKILL_FILE} {err}") from None
    except yaml.YAMLError as err:
        where = getattr(err, "problem_mark", None)
        at = f" (line {where.line + 2})" if where is not None else ""
        raise MalformedSkill(f"the front matter of {SKILL_FILE} is not valid YAML{at}") from None
    if not isinstance(fields, dict):
        raise MalformedSkill(f"the front matter of {SKILL_FILE} is not a mapping of fields")
    return fields, "".join(lines[end + 1 :]).strip()


def resource_files(folder: Path, limit: int = 100) -> list[str]:
    """The files of a skill's folder other than its `SKILL.md`, relative and sorted; symlinks
    and hidden entries are left out (read_skill_file refuses a link leading out anyway)."""
    files: list[str] = []
    for current, subfolders, names in os.walk(folder):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        base = Path(current)
        for name in sorted(names):
            relative = (base / name).relative_to(folder).as_posix()
            if name.startswith(".") or relative == SKILL_FILE or (base / name).is_symlink():
                continue
            files.append(relative)
            if len(files) >= limit:
                return files
    return files
