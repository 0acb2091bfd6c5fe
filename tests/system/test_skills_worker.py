"""`python worker.py` with `TURNKEEPER_SKILLS_DIR`: a malformed skill (a billion-laughs front
matter included) is one warning at start, naming its folder and the problem, and the worker serves
the others."""

from __future__ import annotations

from pathlib import Path

from tests.system.conftest import SystemStack
from tests.unit.activities.skills.skill_folders import billion_laughs

GOOD = "---\nname: refund-policy\ndescription: How to refund.\n---\nRefund at most the total.\n"
NAMELESS = "---\ndescription: A skill without a name.\n---\nInstructions.\n"


async def test_a_malformed_skill_is_logged_at_start_and_the_rest_are_served(
    stack: SystemStack, tmp_path: Path
) -> None:
    skills = tmp_path / "skills"
    for folder, text in (("refund-policy", GOOD), ("broken", NAMELESS)):
        (skills / folder).mkdir(parents=True)
        (skills / folder / "SKILL.md").write_text(text)

    worker = await stack.start_worker(env={"TURNKEEPER_SKILLS_DIR": str(skills)})

    [warning] = worker.events("skill unavailable")
    assert warning["level"] == "warning"
    assert warning["folder"] == str(skills / "broken")
    assert warning["problem"] == "the front matter of SKILL.md gives no name"
    [installed] = worker.events("skills installed")
    assert installed["skills"] == ["refund-policy"]
    assert worker.events("worker started")


async def test_an_alias_bomb_skill_is_refused_at_once_and_the_worker_starts(
    stack: SystemStack, tmp_path: Path
) -> None:
    skills = tmp_path / "skills"
    for folder, text in (("refund-policy", GOOD), ("laughs", f"---\n{billion_laughs()}---\nx\n")):
        (skills / folder).mkdir(parents=True)
        (skills / folder / "SKILL.md").write_text(text)

    worker = await stack.start_worker(env={"TURNKEEPER_SKILLS_DIR": str(skills)})

    [warning] = worker.events("skill unavailable")
    assert warning["folder"] == str(skills / "laughs")
    assert warning["problem"] == "the front matter of SKILL.md uses the YAML anchor &l0"
    [installed] = worker.events("skills installed")
    assert installed["skills"] == ["refund-policy"]
    # Refused while the worker starts (the unit test pins the second), not in the background.
    [started] = worker.events("worker started")
    assert warning["timestamp"] <= started["timestamp"]
