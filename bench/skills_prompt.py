"""`python -m bench.skills_prompt`: what an agent with N installed skills sends with every model
call (its system prompt and tool definitions), when it names them in `agent.skills` (listed by
name and description, loaded on demand with `load_skill`) against the same N always loaded
(`{"name": …, "always": true}`: every instruction in the system prompt), and with no skills.

Measured from a real turn's first model request: a turn per arm on an embedded dev server, a
worker whose model provider only records the request it gets (after the workflow composed the
system prompt, `workflows/llm/activity.py::call_context`, and the worker looked up the offered
tools, `activities/llm/offered_tools.py`). Characters are the system prompt's plus the tool
definitions' JSON; tokens are the repo's estimate, characters over `CHARS_PER_TOKEN`.

The skills are synthetic but shaped like real ones: a one-sentence description (about 120
characters) and a SKILL.md body of `--instructions-chars` characters (default 3,000, about 70
lines: a typical hand-written skill).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from turnkeeper.activities.providers.provider import (
    ModelRequest,
    ModelResponse,
    TextSink,
    estimate_input_tokens,
)
from turnkeeper.contracts.compaction import CHARS_PER_TOKEN
from turnkeeper.contracts.messages import TextBlock
from turnkeeper.contracts.names import SEARCH_ATTRIBUTES, WORKFLOW_TYPE
from turnkeeper.contracts.turn import Usage

from tests.conftest import SA_KEYS, make_settings, temporal_binary
from tests.support.skill_folders import FolderSkill, skills_worker

TURN_TIMEOUT = timedelta(minutes=2)  # a turn that cannot run fails the bench, never hangs it
SYSTEM_PROMPT = "You are the support agent of an online shop. Answer customers politely."
AGENT_TOOLS = ["read_file", "search_files"]
_FILLER = (
    "When the customer asks about this, first read the order with its number, check the dates "
    "against the policy below, and say plainly what happens next and when. "
)


class RecordingProvider:
    """The model of the bench: answers at once and keeps every request it was sent."""

    name = "anthropic"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        self.requests.append(request)
        return ModelResponse(
            content=[TextBlock(text="Done.")],
            stop_reason="end_turn",
            usage=Usage(input_tokens=1, output_tokens=1),
            model=request.model,
        )

    async def count_input_tokens(self, request: ModelRequest) -> int:
        return estimate_input_tokens(request)


def installed(count: int, instructions_chars: int) -> list[FolderSkill]:
    """`count` skills like hand-written ones, each with its own name and text."""
    skills = []
    for number in range(1, count + 1):
        body = f"# Handling case {number}\n\n" + _FILLER * (instructions_chars // len(_FILLER) + 1)
        skills.append(
            FolderSkill(
                name=f"support-case-{number:02}",
                description=(
                    f"How to handle support case type {number}: what to check, what to promise "
                    "and when to hand over to a human."
                ),
                instructions=body[:instructions_chars],
            )
        )
    return skills


def figures(request: ModelRequest) -> dict[str, int]:
    """What one request sends besides its messages, in characters and estimated tokens."""
    tools = json.dumps([tool.model_dump(mode="json") for tool in request.tools])
    chars = len(request.system) + len(tools)
    return {
        "system_chars": len(request.system),
        "tools_chars": len(tools),
        "tools": len(request.tools),
        "chars": chars,
        "tokens": chars // CHARS_PER_TOKEN,
    }


async def first_request(
    client: Client, skills: list[FolderSkill], entries: list[Any], folder: Path
) -> ModelRequest:
    """The first model request of a turn whose agent names `entries` in `agent.skills`."""
    provider = RecordingProvider()
    folder.mkdir(parents=True)  # noqa: ASYNC240 - a bench's set-up, before anything runs
    settings = make_settings(folder, f"bench-skills-{uuid.uuid4()}")
    request = {
        "agent": {
            "id": "bench-support",
            "model": "anthropic:claude-sonnet-4-6",
            "system_prompt": SYSTEM_PROMPT,
            "tools": AGENT_TOOLS,
            "skills": entries,
        },
        "task": {"id": "bench-skills", "input": "Where is my order 1234?"},
    }
    providers: dict[str, Any] = {"anthropic": provider}
    async with skills_worker(client, settings, providers, skills):
        await client.execute_workflow(
            WORKFLOW_TYPE,
            request,
            id=f"bench-skills-{uuid.uuid4()}",
            task_queue=settings.task_queue,
        )
    return provider.requests[0]


async def measure(client: Client, count: int, instructions_chars: int) -> dict[str, Any]:
    """The three arms' figures: no skills, `count` listed, the same `count` always loaded."""
    skills = installed(count, instructions_chars)
    arms = {
        "no skills": [],
        f"{count} listed (load_skill)": [skill.name for skill in skills],
        f"{count} always loaded": [{"name": skill.name, "always": True} for skill in skills],
    }
    with tempfile.TemporaryDirectory() as tmp:
        measured = {
            arm: figures(await first_request(client, skills, entries, Path(tmp) / str(index)))
            for index, (arm, entries) in enumerate(arms.items())
        }
    return {"skills": count, "instructions_chars": instructions_chars, "arms": measured}


def table(result: dict[str, Any]) -> str:
    rows = [
        "| agent | system prompt chars | tool definitions (chars) | total chars | est. tokens |",
        "|---|---:|---:|---:|---:|",
    ]
    for arm, f in result["arms"].items():
        rows.append(
            f"| {arm} | {f['system_chars']:,} | {f['tools_chars']:,} ({f['tools']}) | "
            f"{f['chars']:,} | {f['tokens']:,} |"
        )
    return "\n".join(rows)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter,
        dev_server_existing_path=temporal_binary("temporal"),
        search_attributes=[SA_KEYS[kind](name) for name, kind in SEARCH_ATTRIBUTES.items()],
    )
    async with env:
        result = await measure(env.client, args.skills, args.instructions_chars)
    print(
        f"{args.skills} skills, {args.instructions_chars:,}-character instructions, "
        f"{CHARS_PER_TOKEN} characters a token; sent with every model call:\n"
    )
    print(table(result))
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--skills", type=int, default=50)
    parser.add_argument("--instructions-chars", type=int, default=3000)
    parser.add_argument("--out", default=None, help="also write the figures here, as JSON")
    arguments = parser.parse_args()
    measured = asyncio.run(main(arguments))
    if arguments.out:
        Path(arguments.out).write_text(json.dumps(measured, indent=2))
