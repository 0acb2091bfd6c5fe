"""A test worker's side of skills, written for the turn side's tests and bench: the
`describe_skills` activity and the `load_skill` / `read_skill_file` tools over skills given in
Python. It follows the contract (contracts/skills.py, contracts/skill_io.py) so that the turns
it serves, and the golden history recorded on it, are what a worker with
`run_worker(skills=[turnkeeper.Skill(…)])` gives; tests switch to that once the worker side is
on the same branch."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from temporalio import activity
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker
from turnkeeper.activities.providers.provider import ModelProvider
from turnkeeper.activities.tools.registry import ToolError, WorkerTool, worker_tool
from turnkeeper.contracts.errors import INVALID_TURN_REQUEST
from turnkeeper.contracts.names import ACTIVITY_DESCRIBE_SKILLS
from turnkeeper.contracts.skill_io import DescribeSkillsInput, DescribeSkillsResult, SkillInfo
from turnkeeper.contracts.skills import LOAD_SKILL_TOOL, READ_SKILL_FILE_TOOL

from turnkeeper.worker.settings import Settings
from turnkeeper.worker.wiring import build_activities, tool_registry, worker_workflows
from turnkeeper.worker.wiring import workflow_runner as make_runner


@dataclass(frozen=True)
class StandInSkill:
    name: str
    description: str
    instructions: str
    tools: tuple[str, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)


REFUND_POLICY = "refund-policy"
DESCRIPTION = "How to decide a refund request; load it before refunding anything."
INSTRUCTIONS = "Refund orders under 50 EUR at once with the refund tool; ask a human above."
REFUNDS = StandInSkill(
    REFUND_POLICY,
    DESCRIPTION,
    INSTRUCTIONS,
    tools=("refund",),
    files={"limits.md": "Limit: 50 EUR per order.\n"},
)


@worker_tool
def refund(order: str) -> str:
    """Refunds an order."""
    return f"refunded order {order}"


class StandInSkills:
    """The worker side over `skills`: its activity and its two tools."""

    def __init__(self, skills: list[StandInSkill]) -> None:
        self._skills = {skill.name: skill for skill in skills}

    @activity.defn(name=ACTIVITY_DESCRIBE_SKILLS)
    async def describe_skills(self, question: DescribeSkillsInput) -> DescribeSkillsResult:
        """Each named skill, or InvalidTurnRequest naming one it lacks or whose tool the agent
        has already."""
        described = []
        for ref in question.skills:
            skill = self._skills.get(ref.name)
            if skill is None:
                raise _refused(f"this worker has no skill {ref.name!r}")
            clash = sorted(set(skill.tools) & set(question.agent_tools))
            if clash:
                raise _refused(
                    f"the skill {ref.name!r} brings the tool {clash[0]!r}, which the agent has "
                    "already"
                )
            described.append(
                SkillInfo(
                    name=ref.name,
                    description=skill.description,
                    tools=list(skill.tools),
                    instructions=skill.instructions if ref.always else None,
                )
            )
        return DescribeSkillsResult(skills=described)

    def tools(self) -> list[WorkerTool]:
        skills = self._skills

        @worker_tool(name=LOAD_SKILL_TOOL)
        def load_skill(name: str) -> str:
            """Returns the instructions of one of the skills listed in the system prompt."""
            if name not in skills:
                raise ToolError(f"no skill {name!r}")
            return skills[name].instructions

        @worker_tool(name=READ_SKILL_FILE_TOOL)
        def read_skill_file(name: str, path: str) -> str:
            """Returns a file of a skill, its path relative to the skill's folder."""
            if name not in skills or path not in skills[name].files:
                raise ToolError(f"no file {path!r} in skill {name!r}")
            return skills[name].files[path]

        return [load_skill, read_skill_file]


def _refused(why: str) -> ApplicationError:
    return ApplicationError(f"agent.skills: {why}", type=INVALID_TURN_REQUEST, non_retryable=True)


@asynccontextmanager
async def skills_worker(
    client: Client,
    settings: Settings,
    providers: dict[str, ModelProvider],
    skills: list[StandInSkill],
    extra_tools: list[WorkerTool] | None = None,
) -> AsyncIterator[Worker]:
    """A worker (as `tests.conftest.running_worker`) that also has `skills`."""
    stand_in = StandInSkills(skills)
    tools = tool_registry(settings, [*(extra_tools or [refund]), *stand_in.tools()])
    activities = build_activities(settings, client=client, providers=providers, tools=tools)
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=worker_workflows(),
        workflow_runner=make_runner(),
        activities=[*activities, stand_in.describe_skills],
    )
    async with worker:
        yield worker
