"""Skills for the turn side's tests and bench, served by the real worker side: each
`FolderSkill` is written as a folder with a `SKILL.md` (and its files) under the worker's
`TURNKEEPER_SKILLS_DIR`, and the worker gets the `describe_skills` activity and the
`load_skill` / `read_skill_file` tools exactly as `python worker.py` does (`install_skills`).
The golden history of skills was recorded on an earlier stand-in that followed the same contract
(contracts/skills.py, contracts/skill_io.py), so its `load_skill` result reads a little
differently from today's; replay does not run activities, so it still replays."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from temporalio.client import Client
from temporalio.worker import Worker
from turnkeeper.activities.providers.provider import ModelProvider
from turnkeeper.activities.tools.registry import WorkerTool, worker_tool
from turnkeeper.contracts.skills import SKILL_FILE

from turnkeeper.worker.settings import Settings
from turnkeeper.worker.wiring import (
    build_activities,
    install_skills,
    tool_registry,
    worker_workflows,
)
from turnkeeper.worker.wiring import workflow_runner as make_runner


@dataclass(frozen=True)
class FolderSkill:
    """A skill as a test installs it: `skills_worker` writes it to a skills folder."""

    name: str
    description: str
    instructions: str
    tools: tuple[str, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)


REFUND_POLICY = "refund-policy"
DESCRIPTION = "How to decide a refund request; load it before refunding anything."
INSTRUCTIONS = "Refund orders under 50 EUR at once with the refund tool; ask a human above."
REFUNDS = FolderSkill(
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


def write_skill(root: Path, skill: FolderSkill) -> None:
    """`skill` as an operator installs it: `root/<name>/SKILL.md` and its files."""
    folder = root / skill.name
    folder.mkdir(parents=True)
    fields = {"name": skill.name, "description": skill.description, "tools": list(skill.tools)}
    front = yaml.safe_dump(fields, sort_keys=False, allow_unicode=True)
    (folder / SKILL_FILE).write_text(f"---\n{front}---\n{skill.instructions}\n")
    for path, text in skill.files.items():
        (folder / path).write_text(text)


@asynccontextmanager
async def skills_worker(
    client: Client,
    settings: Settings,
    providers: dict[str, ModelProvider],
    skills: list[FolderSkill],
    extra_tools: list[WorkerTool] | None = None,
) -> AsyncIterator[Worker]:
    """A worker (as `tests.conftest.running_worker`) that also has `skills`, from a skills
    folder under `settings.data_dir`."""
    folder = settings.data_dir / "skills"
    folder.mkdir(parents=True)
    for skill in skills:
        write_skill(folder, skill)
    settings = dataclasses.replace(settings, skills_dir=folder)
    tools = tool_registry(settings, extra_tools or [refund])
    catalog = install_skills(settings, [], tools)
    activities = build_activities(
        settings, client=client, providers=providers, tools=tools, skills=catalog
    )
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=worker_workflows(),
        workflow_runner=make_runner(),
        activities=activities,
    )
    async with worker:
        yield worker
