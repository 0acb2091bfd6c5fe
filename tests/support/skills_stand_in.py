"""A test worker's side of skills, written for the turn side's tests: the `describe_skills`
activity and the `load_skill` / `read_skill_file` tools over one fixed skill, `refund-policy`,
which brings the `refund` tool. It follows the contract (contracts/skills.py,
contracts/skill_io.py) so that the turns it serves, and the golden history recorded on it, are
what a worker with `run_worker(skills=[turnkeeper.Skill(…)])` gives; tests switch to that once
the worker side is on the same branch."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker
from turnkeeper.activities.tools.registry import ToolError, WorkerTool, worker_tool
from turnkeeper.contracts.errors import INVALID_TURN_REQUEST
from turnkeeper.contracts.names import ACTIVITY_DESCRIBE_SKILLS
from turnkeeper.contracts.skill_io import DescribeSkillsInput, DescribeSkillsResult, SkillInfo

from tests.conftest import providers_for
from turnkeeper.testing.fake_anthropic import FakeAnthropic
from turnkeeper.worker.settings import Settings
from turnkeeper.worker.wiring import build_activities, tool_registry, worker_workflows
from turnkeeper.worker.wiring import workflow_runner as make_runner

REFUND_POLICY = "refund-policy"
DESCRIPTION = "How to decide a refund request; load it before refunding anything."
INSTRUCTIONS = "Refund orders under 50 EUR at once with the refund tool; ask a human above."
FILES = {"limits.md": "Limit: 50 EUR per order.\n"}
SKILLS = {REFUND_POLICY: (DESCRIPTION, INSTRUCTIONS, ["refund"])}


@activity.defn(name=ACTIVITY_DESCRIBE_SKILLS)
async def describe_skills(question: DescribeSkillsInput) -> DescribeSkillsResult:
    """What the worker side answers: each named skill, or InvalidTurnRequest naming one it
    lacks or whose tool the agent has already."""
    described = []
    for ref in question.skills:
        if ref.name not in SKILLS:
            raise ApplicationError(
                f"agent.skills: this worker has no skill {ref.name!r} (it has: "
                f"{', '.join(SKILLS)})",
                type=INVALID_TURN_REQUEST,
                non_retryable=True,
            )
        description, instructions, tools = SKILLS[ref.name]
        clash = sorted(set(tools) & set(question.agent_tools))
        if clash:
            raise ApplicationError(
                f"agent.skills: the skill {ref.name!r} brings the tool {clash[0]!r}, which the "
                f"agent has already",
                type=INVALID_TURN_REQUEST,
                non_retryable=True,
            )
        described.append(
            SkillInfo(
                name=ref.name,
                description=description,
                tools=tools,
                instructions=instructions if ref.always else None,
            )
        )
    return DescribeSkillsResult(skills=described)


@worker_tool
def load_skill(name: str) -> str:
    """Returns a skill's instructions."""
    if name not in SKILLS:
        raise ToolError(f"no skill {name!r}")
    return SKILLS[name][1]


@worker_tool
def read_skill_file(name: str, path: str) -> str:
    """Returns one of a skill's files."""
    if name not in SKILLS or path not in FILES:
        raise ToolError(f"no file {path!r} in skill {name!r}")
    return FILES[path]


@worker_tool
def refund(order: str) -> str:
    """Refunds an order."""
    return f"refunded order {order}"


SKILL_WORKER_TOOLS: list[WorkerTool] = [load_skill, read_skill_file, refund]


@asynccontextmanager
async def skills_worker(
    client: Client, settings: Settings, fake: FakeAnthropic, **activity_options: Any
) -> AsyncIterator[Worker]:
    """A test worker (as `tests.conftest.running_worker`) that also has the skill."""
    tools = tool_registry(settings, SKILL_WORKER_TOOLS)
    activities = build_activities(
        settings, client=client, providers=providers_for(fake), tools=tools, **activity_options
    )
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=worker_workflows(),
        workflow_runner=make_runner(),
        activities=[*activities, describe_skills],
    )
    async with worker:
        yield worker
