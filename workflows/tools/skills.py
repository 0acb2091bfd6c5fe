"""`agent.skills` in a turn: described once at its start, then composed into what each model
call sends.

The workflow cannot read the worker's skills, only their names: it asks the `describe_skills`
activity once, before the first model call, and keeps the answer (descriptions, the tools each
skill brings, the instructions of those always loaded) in the turn's state, which continue-as-new
carries, so later calls and runs never ask again. From it come the system prompt's skills part
(`system_prompt_part`), the offered tools (`offered`: each skill's tools plus the built-in
`load_skill` and `read_skill_file`), and the report's `skills_loaded`. A turn without skills
runs no activity and its commands are those it made before skills existed.

`load_skill` and `read_skill_file` never wait for an approval, whatever `require_approval`
says: they read operator-installed text and change nothing. Each skill's own tools follow
`require_approval` like the agent's tools.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.messages import ToolUseBlock
    from turnkeeper.contracts.names import ACTIVITY_DESCRIBE_SKILLS
    from turnkeeper.contracts.skill_io import DescribeSkillsInput, DescribeSkillsResult, SkillInfo
    from turnkeeper.contracts.skills import LOAD_SKILL_TOOL, READ_SKILL_FILE_TOOL, SKILL_TOOLS
    from turnkeeper.contracts.turn import TurnRequest
    from turnkeeper.workflows.activity_calls import FailTurn, execute
    from turnkeeper.workflows.activity_options import DESCRIBE_SKILLS_RETRY, DESCRIBE_SKILLS_TIMEOUT
    from turnkeeper.workflows.failures import cause_message, error_type, fail
    from turnkeeper.workflows.turn_state import Turn

_PATH_HINT_CHARS: Final = 60  # of read_skill_file's path in the activity summary

LISTING_HEADER: Final = "## Skills"
LISTING_INTRO: Final = (
    "These skills hold instructions for particular tasks. Before doing a task one covers, "
    f"call `{LOAD_SKILL_TOOL}` with its name and follow what it returns; "
    f"`{READ_SKILL_FILE_TOOL}` reads a file the instructions name."
)


def agent_tools(request: TurnRequest) -> list[str]:
    """Tool names the agent has without its skills: a skill bringing one of them is refused."""
    names = [*request.agent.tools, *(tool.name for tool in request.external_tools)]
    names += [spec.name for spec in request.agent.subagents]
    return names + [ref.name for ref in request.agent.a2a_agents]


async def describe(turn: Turn) -> None:
    """Asks the worker what the agent's skills are and keeps the answer in `turn`; fails the
    turn with InvalidTurnRequest (naming the skill) when the worker lacks one or its tools
    clash. No skills: nothing runs."""
    refs = turn.request.agent.skill_refs()
    if not refs:
        return
    question = DescribeSkillsInput(skills=refs, agent_tools=agent_tools(turn.request))
    described = await execute(
        ACTIVITY_DESCRIBE_SKILLS,
        question,
        FailTurn(turn, _not_served),
        result_type=DescribeSkillsResult,
        options=workflow.ActivityConfig(
            start_to_close_timeout=DESCRIBE_SKILLS_TIMEOUT,
            retry_policy=DESCRIBE_SKILLS_RETRY,
            summary=f"describe skills · {', '.join(ref.name for ref in refs)}",
        ),
    )
    problem = described_problem(turn.request, described.skills)
    if problem:
        fail(turn, errors.INVALID_TURN_REQUEST, problem)
    turn.described_skills(described.skills)


def _not_served(err: ActivityError) -> tuple[str, str]:
    """A worker without skills support, too, cannot serve the turn: the request must change (or
    go to another task queue), so it is the request's failure, not an outage."""
    prefix = "" if error_type(err) == errors.INVALID_TURN_REQUEST else "agent.skills: "
    return errors.INVALID_TURN_REQUEST, prefix + cause_message(err)


def described_problem(request: TurnRequest, skills: list[SkillInfo]) -> str | None:
    """What makes the worker's answer unusable for this request, or None: a named skill it did
    not describe, or a name in `allowed_tools` that neither the agent nor a skill has."""
    described = {skill.name for skill in skills}
    missing = [ref.name for ref in request.agent.skill_refs() if ref.name not in described]
    if missing:
        return f"agent.skills: the worker did not describe the skill {missing[0]!r}"
    allowed = request.task.constraints.allowed_tools
    known = {*agent_tools(request), *SKILL_TOOLS, *_skill_tools(skills)}
    unknown = [name for name in allowed or [] if name not in known]
    if unknown:
        return (
            f"task.constraints.allowed_tools: names {', '.join(map(repr, unknown))}, "
            f"which neither the agent nor its skills have"
        )
    return None


def offered(names: list[str], skills: list[SkillInfo], allowed: list[str] | None) -> list[str]:
    """`names` (the agent's tools the task allows), then each skill's tools and the built-in
    skill tools, within `allowed_tools` like the agent's own."""
    if not skills:
        return names
    extra = [name for name in [*_skill_tools(skills), *SKILL_TOOLS] if name not in names]
    return names + [name for name in dict.fromkeys(extra) if allowed is None or name in allowed]


def tool_names(turn: Turn) -> set[str]:
    """Every tool name the skills give the agent, offered or not (a call to one the task does
    not allow crosses its boundary, as a call to an agent tool would)."""
    if not turn.tools.skills:
        return set()
    return {*_skill_tools(turn.tools.skills), *SKILL_TOOLS}


def system_prompt_part(skills: list[SkillInfo], always: Iterable[str]) -> str:
    """What follows the agent's system prompt: the instructions of the `always` skills, in the
    order of `agent.skills`, then the others listed by name and description."""
    loaded = set(always)
    parts = [
        skill.instructions.strip()
        for skill in skills
        if skill.name in loaded and skill.instructions
    ]
    listed = [skill for skill in skills if skill.name not in loaded]
    if listed:
        lines = [f"- {skill.name}: {' '.join(skill.description.split())}" for skill in listed]
        parts.append("\n".join([LISTING_HEADER, LISTING_INTRO, "", *lines]))
    return "\n\n".join(part for part in parts if part)


def system_prompt(turn: Turn, base: str) -> str:
    """`base` (the agent's system prompt) followed by the skills part, when there is one."""
    always = [ref.name for ref in turn.request.agent.skill_refs() if ref.always]
    part = system_prompt_part(turn.tools.skills, always)
    return "\n\n".join(p for p in (base, part) if p)


def refusal(turn: Turn, use: ToolUseBlock) -> str | None:
    """The error result of a `load_skill` / `read_skill_file` call naming a skill the agent
    does not list (it runs nothing), or None."""
    if not turn.tools.skills or use.name not in SKILL_TOOLS:
        return None
    name = use.input.get("name")
    listed = [skill.name for skill in turn.tools.skills]
    if name in listed:
        return None
    return f"Unknown skill {name!r}. This agent's skills: {', '.join(listed)}."


def exempt_from_approval(turn: Turn, tool: str) -> bool:
    """`load_skill` and `read_skill_file` of a turn with skills never wait for a human: they
    only read trusted text the operator installed."""
    return bool(turn.tools.skills) and tool in SKILL_TOOLS


def summary(turn: Turn, use: ToolUseBlock) -> str | None:
    """The Web UI's summary of a skill tool's activity (`load_skill refund-policy`,
    `read_skill_file refund-policy/forms/refund.md`), or None for any other tool."""
    if not turn.tools.skills or use.name not in SKILL_TOOLS:
        return None
    name = str(use.input.get("name", ""))
    if use.name == LOAD_SKILL_TOOL:
        return f"{LOAD_SKILL_TOOL} {name}"
    path = str(use.input.get("path", ""))[:_PATH_HINT_CHARS]
    return f"{READ_SKILL_FILE_TOOL} {name}/{path}"


def note_result(turn: Turn, use: ToolUseBlock, is_error: bool) -> None:
    """A tool call ran: a successful `load_skill` adds its skill to `skills_loaded`."""
    if turn.tools.skills and use.name == LOAD_SKILL_TOOL and not is_error:
        turn.tools.loaded_skill(str(use.input.get("name", "")))


def _skill_tools(skills: list[SkillInfo]) -> list[str]:
    return list(dict.fromkeys(tool for skill in skills for tool in skill.tools))
