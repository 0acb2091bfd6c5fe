"""The worker's skill catalog and the `describe_skills` activity: what a turn's `agent.skills`
get, and each refusal (a typed, non-retryable `InvalidTurnRequest` naming the skill)."""

from __future__ import annotations

from pathlib import Path

import pytest
import structlog
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.skills.catalog import SkillCatalog
from turnkeeper.activities.skills.describe_activity import SkillActivities
from turnkeeper.activities.skills.skill import Skill
from turnkeeper.contracts.errors import INVALID_TURN_REQUEST
from turnkeeper.contracts.skill_io import DescribeSkillsInput, DescribeSkillsResult, SkillInfo
from turnkeeper.contracts.skills import SkillRef

from tests.unit.activities.skills.skill_folders import REFUND_POLICY, front_matter, skill_folder

TONE = Skill("tone", "How we write to customers.", "Be brief and kind.")
SHIPPING = Skill("shipping", "Shipping questions.", "Look the parcel up.", tools=["track"])
CARRIERS = Skill("carriers", "Carrier claims.", "File a claim.", tools=["track"])
WORKER_TOOLS = ["refund", "track", "lookup_order"]


@pytest.fixture
def catalog(tmp_path: Path) -> SkillCatalog:
    skill_folder(tmp_path, "refund-policy", REFUND_POLICY)
    skill_folder(tmp_path, "nameless", front_matter(name="nameless"))
    return SkillCatalog.load(tmp_path, [TONE, SHIPPING, CARRIERS], worker_tools=WORKER_TOOLS)


async def _describe(
    catalog: SkillCatalog, *refs: str | SkillRef, agent_tools: tuple[str, ...] = ()
) -> DescribeSkillsResult:
    request = DescribeSkillsInput(
        skills=[SkillRef(name=r) if isinstance(r, str) else r for r in refs],
        agent_tools=list(agent_tools),
    )
    return await ActivityEnvironment().run(SkillActivities(catalog).describe_skills, request)


async def _refusal(catalog: SkillCatalog, *refs: str, agent_tools: tuple[str, ...] = ()) -> str:
    with pytest.raises(ApplicationError) as caught:
        await _describe(catalog, *refs, agent_tools=agent_tools)
    assert caught.value.type == INVALID_TURN_REQUEST
    assert caught.value.non_retryable
    return caught.value.message


async def test_each_skill_in_order_with_the_instructions_of_always_ones_only(
    catalog: SkillCatalog,
) -> None:
    result = await _describe(
        catalog, "refund-policy", SkillRef(name="tone", always=True), agent_tools=("lookup_order",)
    )

    assert result.skills == [
        SkillInfo(
            name="refund-policy",
            description="How to decide and issue refunds; load it before any refund.",
            tools=["refund"],
        ),
        SkillInfo(
            name="tone",
            description="How we write to customers.",
            instructions="Be brief and kind.",
        ),
    ]


async def test_no_skills_named_is_an_empty_answer_even_on_a_worker_without_skills() -> None:
    assert await _describe(SkillCatalog()) == DescribeSkillsResult()


async def test_a_skill_the_worker_lacks_is_refused_listing_what_it_has(
    catalog: SkillCatalog,
) -> None:
    message = await _refusal(catalog, "tone", "returns")
    assert message == (
        "agent.skills: this worker has no skill 'returns' "
        "(it has: carriers, refund-policy, shipping, tone)"
    )


async def test_a_malformed_skill_is_refused_saying_why(catalog: SkillCatalog) -> None:
    message = await _refusal(catalog, "nameless")
    assert message == (
        "agent.skills: the skill 'nameless' is unavailable on this worker: "
        "the front matter of SKILL.md gives no description"
    )


async def test_a_tool_two_skills_bring_is_refused_naming_both(catalog: SkillCatalog) -> None:
    message = await _refusal(catalog, "shipping", "tone", "carriers")
    assert "the skills 'shipping' and 'carriers' both bring the tool 'track'" in message


async def test_a_tool_the_agent_already_has_is_never_shadowed(catalog: SkillCatalog) -> None:
    message = await _refusal(catalog, "refund-policy", agent_tools=("refund",))
    assert "the skill 'refund-policy' brings the tool 'refund', which the agent has already" in (
        message
    )


async def test_a_skill_whose_tool_the_worker_lacks_is_unavailable(tmp_path: Path) -> None:
    skill_folder(tmp_path, "refund-policy", REFUND_POLICY)
    catalog = SkillCatalog.load(tmp_path, [SHIPPING], worker_tools=["lookup_order"])

    assert catalog.names() == []
    message = await _refusal(catalog, "refund-policy")
    assert "it brings the tool(s) 'refund', which this worker does not have" in message
    assert "shipping" in await _refusal(catalog, "shipping")


def test_each_problem_is_logged_once_at_start_naming_the_folder(tmp_path: Path) -> None:
    skill_folder(tmp_path, "broken", None)
    skill_folder(tmp_path, "refund-policy", REFUND_POLICY)
    with structlog.testing.capture_logs() as captured:
        SkillCatalog.load(tmp_path, worker_tools=WORKER_TOOLS)
    warnings = [line for line in captured if line["log_level"] == "warning"]
    assert warnings == [
        {
            "event": "skill unavailable",
            "log_level": "warning",
            "skill": "broken",
            "folder": str(tmp_path / "broken"),
            "problem": "the folder has no SKILL.md",
        }
    ]
    assert {"event": "skills installed", "log_level": "info", "skills": ["refund-policy"]} in (
        captured
    )


def test_a_skill_in_code_named_like_a_folders_skill_is_refused_at_start(tmp_path: Path) -> None:
    skill_folder(tmp_path, "refund-policy", REFUND_POLICY)
    twin = Skill("refund-policy", "Another.", "Other text.")
    with pytest.raises(ValueError, match="two skills are named 'refund-policy'"):
        SkillCatalog.load(tmp_path, [twin], worker_tools=WORKER_TOOLS)


def test_two_skills_in_code_with_one_name_are_refused_at_start() -> None:
    with pytest.raises(ValueError, match="two skills are named 'tone'"):
        SkillCatalog.load(None, [TONE, Skill("tone", "Again.", "x")])


def test_something_that_is_not_a_skill_is_named() -> None:
    with pytest.raises(TypeError, match="is not a skill"):
        SkillCatalog.load(None, ["tone"])  # type: ignore[list-item]
