"""Reading `SKILL.md` folders: a good skill, and each way one can be malformed (reported as a
problem naming the folder, while the others are served)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from turnkeeper.activities.skills.skill import Skill
from turnkeeper.activities.skills.skill_file import (
    MalformedSkill,
    SkillsDirError,
    read_skill,
    read_skills_dir,
    resource_files,
)

from tests.unit.activities.skills.skill_folders import REFUND_POLICY, front_matter, skill_folder


def test_a_good_skill_reads_name_description_tools_and_instructions(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path, "refund-policy", REFUND_POLICY, **{"limits.md": "caps"})

    skill = read_skill(folder)

    assert skill == Skill(
        "refund-policy",
        "How to decide and issue refunds; load it before any refund.",
        "Refund at most the order's total. Read limits.md for the per-country caps.",
        ("refund",),
    )
    assert skill.folder == folder
    assert resource_files(folder) == ["limits.md"]


def test_tools_are_optional_and_other_front_matter_fields_are_ignored(tmp_path: Path) -> None:
    text = front_matter(name="notes", description="Notes.", license="MIT")
    skill = read_skill(skill_folder(tmp_path, "notes", text))
    assert (skill.tools, skill.instructions) == ((), "The instructions.")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, "the folder has no SKILL.md"),
        ("Just instructions, no front matter.\n", "does not start with front matter"),
        ("---\nname: x\ndescription: y\n", "no closing '---' line"),
        ("---\nname: x\ndescription: a: b\n---\nbody\n", "is not valid YAML (line 3)"),
        ("---\n- a list\n---\nbody\n", "is not a mapping of fields"),
        (front_matter(description="No name."), "gives no name"),
        (front_matter(name="nameless"), "gives no description"),
        (front_matter(name="x", description="''"), "gives no description"),
        (front_matter(name="Refund_Policy", description="d"), "does not fit the format"),
        (front_matter(name="x", description="d", tools="refund"), "must be a list of"),
        (front_matter(name="x", description="d", tools="[1, 2]"), "must be a list of"),
    ],
)
def test_a_malformed_skill_says_why(tmp_path: Path, text: str | None, problem: str) -> None:
    with pytest.raises(MalformedSkill, match=re.escape(problem)):
        read_skill(skill_folder(tmp_path, "broken", text))


def test_a_skill_md_that_is_not_utf8_is_malformed(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path, "latin", None)
    (folder / "SKILL.md").write_bytes(b"---\nname: caf\xe9\n---\n")
    with pytest.raises(MalformedSkill, match="not UTF-8"):
        read_skill(folder)


def test_a_folder_serves_its_good_skills_and_lists_the_problems_of_the_others(
    tmp_path: Path,
) -> None:
    skill_folder(tmp_path, "refund-policy", REFUND_POLICY)
    skill_folder(tmp_path, "empty", None)
    skill_folder(tmp_path, "nameless", front_matter(name="nameless"))
    skill_folder(tmp_path, ".git", None)  # hidden folders are not skills
    (tmp_path / "README.md").write_text("plain files are not skills")

    found = read_skills_dir(tmp_path)

    assert [skill.name for skill in found.skills] == ["refund-policy"]
    assert [(p.name, p.folder, p.reason) for p in found.problems] == [
        ("empty", tmp_path / "empty", "the folder has no SKILL.md"),
        ("nameless", tmp_path / "nameless", "the front matter of SKILL.md gives no description"),
    ]


def test_two_folders_naming_the_same_skill_are_both_refused(tmp_path: Path) -> None:
    skill_folder(tmp_path, "a", front_matter(name="notes", description="First."))
    skill_folder(tmp_path, "b", front_matter(name="notes", description="Second."))

    found = read_skills_dir(tmp_path)

    assert found.skills == ()
    assert {p.folder for p in found.problems} == {tmp_path / "a", tmp_path / "b"}
    assert all("two folders name the skill 'notes'" in p.reason for p in found.problems)


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_skills_dir_that_cannot_be_read_names_the_variable(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "skills"
    if kind == "file":
        path.write_text("not a folder")
    with pytest.raises(SkillsDirError, match=f"TURNKEEPER_SKILLS_DIR: the skills folder {path}"):
        read_skills_dir(path)


def test_resource_files_leave_out_links_and_hidden_files(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path, "s", REFUND_POLICY, **{"a.md": "a", ".hidden": "h"})
    (folder / "sub").mkdir()
    (folder / "sub" / "b.md").write_text("b")
    (folder / "link.md").symlink_to(tmp_path / "elsewhere")
    assert resource_files(folder) == ["a.md", "sub/b.md"]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"name": "Bad Name"}, "does not fit the format"),
        ({"name": "x" * 65}, "at most 64 characters"),
        ({"description": "  "}, "the description is empty"),
        ({"tools": "refund"}, "tools must be a list"),
        ({"tools": ["refund", 3]}, "tools must be a list"),
    ],
)
def test_a_skill_defined_in_code_is_checked_when_made(
    arguments: dict[str, object], problem: str
) -> None:
    fields: dict[str, object] = {"name": "ok", "description": "d", "instructions": "i"}
    with pytest.raises(ValueError, match=problem):
        Skill(**(fields | arguments))  # type: ignore[arg-type]
