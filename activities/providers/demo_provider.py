"""The offline demo models, `demo:workspace-summarizer` and `demo:tool-caller`: no API key, no
network, no randomness.

It is a scripted stand-in for a real model so that the whole runtime (tool loop, parallel tool
calls, an approval, the report) can be seen on a fresh machine. It is only ever used when a
request names the `demo` provider; it never stands in for a real model silently. Every answer
of the summarizer starts with "[offline demo model]", the tool-caller's with its own prefix.

`demo:tool-caller` calls each tool it is offered once and reports what they returned
(`tool_caller_model`). The summarizer's script, read off the conversation (so a retried call
gives the same answer):
  0. offered sub-agents (tools whose only input is `task`): hand them the user's task, all at
     once, and answer with what they said; otherwise, offered `load_skill` with skills listed in
     the system prompt, first load them all at once (as a model would before a task they
     cover), then:
  1. list the workspace (`list_files`);
  2. read up to three listed files at once (parallel `read_file` calls);
  3. save a summary of their first lines to `summary.md` (`write_file`, which needs approval);
  4. answer, saying whether the summary was saved.
"""

from __future__ import annotations

import json
import re

from turnkeeper.activities.providers.provider import (
    ModelCallError,
    ModelRequest,
    ModelResponse,
    TextSink,
    estimate_input_tokens,
)
from turnkeeper.activities.providers.tool_caller_model import (
    TOOL_CALLER_MODEL,
    tool_caller_answer,
)
from turnkeeper.contracts.errors import LLM_INVALID_REQUEST
from turnkeeper.contracts.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from turnkeeper.contracts.tools import ToolDefinition
from turnkeeper.contracts.turn import Usage

DEMO_MODEL = "workspace-summarizer"
PREFIX = "[offline demo model]"
SUMMARY_FILE = "summary.md"
MAX_FILES = 3
LOAD_SKILL = "load_skill"
# A skill listed in the system prompt, as workflows/tools/skills.py writes the list (`- name: …`
# under `## Skills`); the demo reads the prompt as a model would, not the workflow's code.
_LISTED_SKILL = re.compile(r"^- ([a-z0-9]+(?:-[a-z0-9]+)*): ", re.MULTILINE)


class DemoProvider:
    name = "demo"

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        if request.model == TOOL_CALLER_MODEL:
            content = tool_caller_answer(request)
        elif request.model == DEMO_MODEL:
            content = _summarizer_answer(request)
        else:
            raise ModelCallError(
                f"the demo provider has the models 'demo:{DEMO_MODEL}' and "
                f"'demo:{TOOL_CALLER_MODEL}', not 'demo:{request.model}'",
                error_type=LLM_INVALID_REQUEST,
                retryable=False,
            )
        stop = "tool_use" if any(isinstance(b, ToolUseBlock) for b in content) else "end_turn"
        if on_text is not None:
            for block in content:
                if isinstance(block, TextBlock):
                    for word in block.text.split(" "):
                        on_text(word + " ")
        return ModelResponse(
            content=content, stop_reason=stop, usage=_usage(request, content), model=request.model
        )

    async def count_input_tokens(self, request: ModelRequest) -> int:
        return estimate_input_tokens(request)


def _summarizer_answer(request: ModelRequest) -> list[ContentBlock]:
    """`demo:workspace-summarizer`'s next step of its script."""
    offered = {tool.name for tool in request.tools}
    delegates = sorted(tool.name for tool in request.tools if _is_subagent(tool))
    skills = _listed_skills(request.system) if LOAD_SKILL in offered else []
    if delegates:
        return _delegate(request.messages, delegates)
    if skills and not _loaded_skills(request.messages):
        return _load(skills)
    return _next_step(_without_skill_loading(request.messages), offered)


def _is_subagent(tool: ToolDefinition) -> bool:
    schema = tool.input_schema
    properties = schema.get("properties")
    return isinstance(properties, dict) and set(properties) == {"task"}


def _delegate(messages: list[Message], delegates: list[str]) -> list[ContentBlock]:
    """A lead agent's script: every sub-agent gets the user's task; then their answers."""
    results = _last_results(messages)
    if not any(message.role == "assistant" for message in messages):
        task = messages[-1].text() if messages else ""
        calls = [_use(0, i, name, {"task": task}) for i, name in enumerate(delegates)]
        return [_say(f"Handing the task to {', '.join(delegates)}."), *calls]
    uses = {use.id: use.name for use in _last_tool_uses(messages)}
    lines = [f"- {uses.get(r.tool_use_id, '?')}: {r.text()}" for r in results]
    return [_say("\n".join([f"{PREFIX} My sub-agents answered:", *lines]))]


def _listed_skills(system: str) -> list[str]:
    _, header, listing = system.partition("## Skills")
    return _LISTED_SKILL.findall(listing) if header else []


def _loaded_skills(messages: list[Message]) -> bool:
    return any(
        use.name == LOAD_SKILL
        for message in messages
        if message.role == "assistant"
        for use in message.tool_uses()
    )


def _load(skills: list[str]) -> list[ContentBlock]:
    calls = [_use(9, i, LOAD_SKILL, {"name": name}) for i, name in enumerate(skills)]
    return [_say(f"Loading the skill(s) {', '.join(skills)} first."), *calls]


def _without_skill_loading(messages: list[Message]) -> list[Message]:
    """The conversation as the rest of the script counts its steps: without the exchange that
    loaded the skills (its answer and their results)."""
    for index, message in enumerate(messages):
        if message.role == "assistant" and any(
            use.name == LOAD_SKILL for use in message.tool_uses()
        ):
            return [*messages[:index], *messages[index + 2 :]]
    return messages


def _next_step(messages: list[Message], offered: set[str]) -> list[ContentBlock]:
    step = sum(1 for message in messages if message.role == "assistant")
    results = _last_results(messages)
    if step == 0 and "list_files" in offered:
        return [_say("Let me look at the workspace."), _use(0, 0, "list_files", {"path": "."})]
    if step == 1 and results:
        names = _files_from_listing(results[0].text())[:MAX_FILES]
        if names and "read_file" in offered:
            reads = [_use(1, i, "read_file", {"path": name}) for i, name in enumerate(names)]
            return [_say(f"Reading {len(names)} file(s) in parallel."), *reads]
        return [_say(f"{PREFIX} The workspace has no files I can summarise.")]
    if step == 2 and results and "write_file" in offered:
        summary = _summary(messages, results)
        return [_say("Saving the summary."), _use(2, 0, "write_file", summary)]
    return [_say(_final_answer(messages, results))]


def _files_from_listing(listing: str) -> list[str]:
    names = [line.strip() for line in listing.splitlines()]
    return [n for n in names if n and not n.endswith("/") and n != SUMMARY_FILE and " " not in n]


def _summary(messages: list[Message], results: list[ToolResultBlock]) -> dict[str, str]:
    paths = {use.id: str(use.input.get("path", "?")) for use in _last_tool_uses(messages)}
    lines = ["# Summary", ""]
    for result in results:
        first = next((line for line in result.text().splitlines() if line.strip()), "(empty)")
        status = "could not be read" if result.is_error else first.strip().lstrip("# ")
        lines.append(f"- {paths.get(result.tool_use_id, '?')}: {status}")
    return {"path": SUMMARY_FILE, "content": "\n".join(lines) + "\n"}


def _final_answer(messages: list[Message], results: list[ToolResultBlock]) -> str:
    wrote = [use for use in _last_tool_uses(messages) if use.name == "write_file"]
    if not results or not wrote:
        return f"{PREFIX} Hello! I am a scripted demo; give me workspace tools to see a tool loop."
    if results[0].is_error:
        return f"{PREFIX} I did not save the summary: {results[0].text()}"
    return f"{PREFIX} I read the workspace and saved {SUMMARY_FILE}: {results[0].text()}"


def _last_results(messages: list[Message]) -> list[ToolResultBlock]:
    if not messages or messages[-1].role != "user":
        return []
    return [b for b in messages[-1].content if isinstance(b, ToolResultBlock)]


def _last_tool_uses(messages: list[Message]) -> list[ToolUseBlock]:
    assistants = [m for m in messages if m.role == "assistant"]
    return assistants[-1].tool_uses() if assistants else []


def _say(text: str) -> TextBlock:
    return TextBlock(text=text)


def _use(step: int, index: int, name: str, arguments: dict[str, str]) -> ToolUseBlock:
    return ToolUseBlock(id=f"toolu_demo_{step}_{index}", name=name, input=arguments)


def _usage(request: ModelRequest, content: list[ContentBlock]) -> Usage:
    answer = sum(len(json.dumps(b.model_dump())) for b in content)
    return Usage(input_tokens=estimate_input_tokens(request), output_tokens=max(1, answer // 4))
