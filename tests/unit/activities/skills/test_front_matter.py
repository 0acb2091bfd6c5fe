"""Front matter a hostile `SKILL.md` could use to hang or kill the worker at start: aliases (the
"billion laughs"), anchors, deep nesting and sheer size are refused at once, as a problem of that
one skill."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from turnkeeper.activities.skills.front_matter import (
    MAX_DEPTH,
    MAX_FRONT_MATTER_BYTES,
    FrontMatterRefused,
    load_front_matter,
)
from turnkeeper.activities.skills.skill_file import read_skills_dir

from tests.unit.activities.skills.skill_folders import REFUND_POLICY, billion_laughs, skill_folder


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (billion_laughs(), "uses the YAML anchor &l0"),
        ("name: x\ndescription: &d Shared.\nother: *d\n", "uses the YAML anchor &d"),
        ("name: x\ndescription: d\nother: *nowhere\n", "uses the YAML alias *nowhere"),
        ("name: x\ndescription: d\ntools: &t [a]\n", "uses the YAML anchor &t"),
        ("deep: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nests deeper than 32"),
        ("deep: " + "[" * 60_000 + "]" * 60_000, "over the limit of 65536 bytes"),
        ("description: " + "x" * MAX_FRONT_MATTER_BYTES, "over the limit of 65536 bytes"),
    ],
)
def test_hostile_front_matter_is_refused_within_a_second(text: str, problem: str) -> None:
    started = time.monotonic()
    with pytest.raises(FrontMatterRefused, match=re.escape(problem)):
        load_front_matter(text)
    assert time.monotonic() - started < 1.0


def test_front_matter_within_the_bounds_reads_as_before() -> None:
    # The mapping, MAX_DEPTH - 2 lists and the scalar: MAX_DEPTH levels.
    nested = "deep: " + "[" * (MAX_DEPTH - 2) + "1" + "]" * (MAX_DEPTH - 2) + "\n"
    text = "name: x\ndescription: '&not an anchor, *not an alias'\n" + nested
    fields = load_front_matter(text)
    assert fields["description"] == "&not an anchor, *not an alias"
    padding = "# " + "x" * (MAX_FRONT_MATTER_BYTES - 30) + "\n"
    assert load_front_matter(padding + "name: x\n") == {"name": "x"}


def test_a_billion_laughs_skill_is_one_problem_and_the_others_are_served(tmp_path: Path) -> None:
    skill_folder(tmp_path, "refund-policy", REFUND_POLICY)
    skill_folder(tmp_path, "laughs", f"---\n{billion_laughs()}---\nBody.\n")

    started = time.monotonic()
    found = read_skills_dir(tmp_path)

    assert time.monotonic() - started < 1.0
    assert [skill.name for skill in found.skills] == ["refund-policy"]
    [problem] = found.problems
    assert (problem.name, problem.folder) == ("laughs", tmp_path / "laughs")
    assert problem.reason == "the front matter of SKILL.md uses the YAML anchor &l0"
