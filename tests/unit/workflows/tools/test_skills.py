"""The turn side of `agent.skills`, without a server: the system prompt a turn with skills
sends, the tools it offers (within `allowed_tools`), the refusal of a skill the agent does not
list, approvals, the activity summaries, `skills_loaded`, and what carries across
continue-as-new."""

from __future__ import annotations

from typing import Any

from turnkeeper.contracts.messages import ToolUseBlock
from turnkeeper.contracts.request_checks import request_problem
from turnkeeper.contracts.skill_io import SkillInfo
from turnkeeper.workflows.llm import compaction
from turnkeeper.workflows.llm.activity import call_context
from turnkeeper.workflows.tools import skills
from turnkeeper.workflows.tools.calls import _needs_approval
from turnkeeper.workflows.turn_state import Turn

from tests.unit.builders import constraints, request, turn

REFUNDS = SkillInfo(
    name="refund-policy",
    description="How to decide a refund request.\nLoad it before any refund.",
    tools=["refund"],
)
TONE = SkillInfo(name="house-tone", description="How we write.", instructions="Write plainly.\n")
LABELS = SkillInfo(name="labels", description="Shipping labels.", tools=["print_label", "refund"])


def described(agent: dict[str, Any] | None = None, task: dict[str, Any] | None = None) -> Turn:
    agent = {
        "system_prompt": "You help customers.",
        "tools": ["read_file"],
        "skills": ["refund-policy", {"name": "house-tone", "always": True}],
        **(agent or {}),
    }
    t = turn(request(agent, task))
    infos = {info.name: info for info in (REFUNDS, TONE, LABELS)}
    t.described_skills([infos[ref.name] for ref in t.request.agent.skill_refs()])
    return t


def use(tool: str, **arguments: Any) -> ToolUseBlock:
    return ToolUseBlock(id="toolu_1", name=tool, input=arguments)


def test_the_system_prompt_has_always_instructions_then_the_list_of_the_others() -> None:
    system = call_context(described()).system_prompt

    assert system == (
        "You help customers.\n\nWrite plainly.\n\n"
        f"## Skills\n{skills.LISTING_INTRO}\n\n"
        "- refund-policy: How to decide a refund request. Load it before any refund."
    )


def test_always_instructions_keep_the_order_of_agent_skills() -> None:
    first = SkillInfo(name="a", description="A.", instructions="First.")
    second = SkillInfo(name="b", description="B.", instructions="Second.")

    assert skills.system_prompt_part([second, first], ["a", "b"]) == "Second.\n\nFirst."


def test_an_output_schema_instruction_still_comes_last() -> None:
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    system = call_context(described({"output_schema": schema})).system_prompt

    assert system.index("Write plainly.") < system.index("## Skills") < system.index("JSON")


def test_a_turn_without_skills_sends_the_system_prompt_alone() -> None:
    t = turn(request({"system_prompt": "You help customers."}))

    assert call_context(t).system_prompt == "You help customers."
    assert skills.offered(["read_file"], t.tools.skills, None) == ["read_file"]
    assert skills.tool_names(t) == set()


def test_skills_bring_their_tools_and_the_two_skill_tools_once_each() -> None:
    offered = skills.offered(["read_file"], [REFUNDS, LABELS], None)

    assert offered == ["read_file", "refund", "print_label", "load_skill", "read_skill_file"]


def test_allowed_tools_bounds_skill_tools_like_the_agents_own() -> None:
    offered = skills.offered([], [REFUNDS, LABELS], ["load_skill", "refund"])

    assert offered == ["refund", "load_skill"]


def test_a_call_naming_a_skill_the_agent_does_not_list_is_refused() -> None:
    t = described()

    refused = skills.refusal(t, use("load_skill", name="payroll"))
    assert refused == "Unknown skill 'payroll'. This agent's skills: refund-policy, house-tone."
    assert skills.refusal(t, use("read_skill_file", name="labels", path="a.md")) is not None
    assert skills.refusal(t, use("load_skill", name="refund-policy")) is None
    assert skills.refusal(t, use("refund", name="payroll")) is None


def test_skill_tools_never_wait_for_approval_but_skills_own_tools_do() -> None:
    t = described(task=constraints(require_approval=["*"]))

    assert not _needs_approval(t, use("load_skill", name="refund-policy"))
    assert not _needs_approval(t, use("read_skill_file", name="refund-policy", path="x"))
    assert _needs_approval(t, use("refund", order="A1"))


def test_a_turn_without_skills_treats_a_tool_called_load_skill_as_any_other() -> None:
    t = turn(request(task=constraints(require_approval=["*"])))

    assert _needs_approval(t, use("load_skill", name="x"))
    assert skills.refusal(t, use("load_skill", name="x")) is None
    assert skills.summary(t, use("load_skill", name="x")) is None


def test_the_web_ui_summaries_name_the_skill_and_the_file() -> None:
    t = described()

    assert skills.summary(t, use("load_skill", name="refund-policy")) == "load_skill refund-policy"
    read = use("read_skill_file", name="refund-policy", path="forms/refund.md")
    assert skills.summary(t, read) == "read_skill_file refund-policy/forms/refund.md"
    assert skills.summary(t, use("refund", order="A1")) is None


def test_skills_loaded_lists_always_ones_first_then_each_load_once_in_order() -> None:
    t = described({"skills": ["labels", {"name": "house-tone", "always": True}, "refund-policy"]})

    skills.note_result(t, use("load_skill", name="refund-policy"), is_error=False)
    skills.note_result(t, use("load_skill", name="labels"), is_error=True)
    skills.note_result(t, use("load_skill", name="labels"), is_error=False)
    skills.note_result(t, use("load_skill", name="refund-policy"), is_error=False)
    skills.note_result(t, use("read_skill_file", name="labels", path="a"), is_error=False)

    assert t.tools.skills_loaded == ["house-tone", "refund-policy", "labels"]
    assert t.report("completed", t.started).skills_loaded == t.tools.skills_loaded


def test_described_skills_and_skills_loaded_carry_across_continue_as_new() -> None:
    t = described()
    skills.note_result(t, use("load_skill", name="refund-policy"), is_error=False)

    resumed = Turn.resume(
        t.request, type(t.progress()).model_validate_json(t.progress().model_dump_json())
    )

    assert resumed.tools.skills == t.tools.skills
    assert resumed.tools.skills_loaded == ["house-tone", "refund-policy"]
    assert call_context(resumed).system_prompt == call_context(t).system_prompt


def test_allowed_tools_may_name_skill_tools_checked_once_described() -> None:
    allowed = constraints(allowed_tools=["read_file", "refund", "load_skill"])
    with_skills = request({"tools": ["read_file"], "skills": ["refund-policy"]}, allowed)

    assert request_problem(with_skills) is None
    assert skills.described_problem(with_skills, [REFUNDS]) is None
    wrong = request(
        {"tools": ["read_file"], "skills": ["refund-policy"]},
        constraints(allowed_tools=["print_label"]),
    )
    assert "'print_label', which neither the agent nor its skills have" in str(
        skills.described_problem(wrong, [REFUNDS])
    )


def test_an_answer_missing_a_named_skill_is_refused_naming_it() -> None:
    asked = request({"skills": ["refund-policy", "labels"]})

    assert skills.described_problem(asked, [REFUNDS]) == (
        "agent.skills: the worker did not describe the skill 'labels'"
    )


def test_the_skills_activity_learns_the_agents_own_tool_names() -> None:
    asked = request(
        {"tools": ["read_file"], "skills": ["refund-policy"]},
        external_tools=[{"name": "ask_user", "input_schema": {"type": "object"}}],
    )

    assert skills.agent_tools(asked) == ["read_file", "ask_user"]


def test_compaction_counts_the_always_instructions_in_what_is_sent() -> None:
    long_tone = TONE.model_copy(update={"instructions": "Write plainly. " * 400})
    bare = turn(request({"system_prompt": "You help customers."}))
    t = described()
    t.described_skills([REFUNDS, long_tone])

    assert compaction._counted(t) - compaction._counted(bare) >= 6000 // 4
