"""The agents an MCP endpoint serves: each `*.json` agent file of a folder (the same file
`turnkeeper run --agent FILE` reads) is one tool, named by its `agent.id`, taking `{"task":
string}`.

Every file is read and validated when the server starts, with the checks a turn's request meets,
so a typo is said at once, naming the file and the field, instead of failing the first call.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from turnkeeper.client.requests import RequestError, read_agent_definition, validate_request
from turnkeeper.client.turns import suffixed_turn_id
from turnkeeper.contracts.turn import TurnRequest

if TYPE_CHECKING:
    from mcp_types import Tool

# The input every served agent takes: the task, and nothing else (no field of the turn's request
# is the caller's to set through a tool: budgets, tools and approvers are the agent file's).
TASK_ARGUMENT: Final = "task"
INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        TASK_ARGUMENT: {"type": "string", "minLength": 1, "description": "What to do."},
    },
    "required": [TASK_ARGUMENT],
    "additionalProperties": False,
}
# The turn's workflow id, which is the task id: `mcp-<agent id>-<32 hex digits>`. Random enough
# that nobody guesses another's (the tasks specs ask for that, though every lookup also checks
# who asks), and prefixed so that `tasks/list` can tell the turns started over MCP.
TURN_ID_PREFIX: Final = "mcp-"
# MCP tool names (SEP-986): what an `agent.id` must be to name a tool.
_TOOL_NAME_CHARS: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-."
)
_TOOL_NAME_MAX: Final = 128


class AgentFileError(Exception):
    """An agent folder cannot be served: the message names the file and the field at fault."""


@dataclass(frozen=True)
class ServedAgent:
    """One agent file, served as one tool."""

    file: Path
    agent: dict[str, Any]
    """The agent definition as the file holds it."""
    constraints: dict[str, Any]
    """The file's default constraints of each turn."""
    description: str
    """The tool's description: the file's `description`, else one naming the agent."""
    request_template: TurnRequest
    """The request as validated at start, with a placeholder task."""

    @property
    def name(self) -> str:
        """The tool's name: the agent's id."""
        return self.request_template.agent.id

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self.request_template.agent.output_schema

    def tool(self) -> Tool:
        """The tool as `tools/list` lists it (tasks optional: a client may poll or wait)."""
        # Imported here: the types cost a plain `turnkeeper serve`, which lists no tools, 0.8 s.
        from mcp_types import Tool, ToolExecution

        return Tool(
            name=self.name,
            description=self.description,
            input_schema=INPUT_SCHEMA,
            output_schema=self.output_schema,
            execution=ToolExecution(task_support="optional"),
        )

    def turn(self, task: str) -> tuple[str, TurnRequest]:
        """A new turn of this agent on `task`: its workflow id and its request."""
        suffix = uuid.uuid4().hex
        workflow_id = suffixed_turn_id(f"{TURN_ID_PREFIX}{self.name}", suffix)
        task_spec = {"id": f"task-{suffix}", "input": task, "constraints": self.constraints}
        request = self.request_template.model_copy(
            update={"task": self.request_template.task.model_validate(task_spec)}
        )
        return workflow_id, request


def load_agents(folder: Path) -> dict[str, ServedAgent]:
    """The agents of `folder`'s `*.json` files, by tool name.

    Raises:
        AgentFileError: No such folder, no agent file in it, a file that does not validate
            (naming the file and the field), an `agent.id` that is no MCP tool name, an
            `output_schema` that is not an object schema, or two files of one `agent.id`.
    """
    if not folder.is_dir():
        raise AgentFileError(f"--agents {folder}: no such folder")
    files = sorted(folder.glob("*.json"))
    if not files:
        raise AgentFileError(f"--agents {folder}: no agent file (*.json) in it")
    served: dict[str, ServedAgent] = {}
    for path in files:
        agent = _served(path)
        if agent.name in served:
            raise AgentFileError(
                f"{path}: id: {agent.name!r} is already the id of {served[agent.name].file}"
            )
        served[agent.name] = agent
    return served


def _served(path: Path) -> ServedAgent:
    try:
        parts = read_agent_definition(path, "--agents")
        template = validate_request(
            {
                "agent": parts.agent,
                "task": {"id": "check", "input": "check", "constraints": parts.constraints},
            }
        )
    except RequestError as error:
        message = str(error)
        raise AgentFileError(message if str(path) in message else f"{path}: {message}") from None
    name = template.agent.id
    if len(name) > _TOOL_NAME_MAX or not set(name) <= _TOOL_NAME_CHARS:
        raise AgentFileError(
            f"{path}: id: {name!r} cannot name an MCP tool (at most {_TOOL_NAME_MAX} letters, "
            "digits and _ - .)"
        )
    schema = template.agent.output_schema
    if schema is not None and schema.get("type") != "object":
        raise AgentFileError(
            f"{path}: output_schema: an MCP tool's output schema describes an object "
            '("type": "object")'
        )
    description = parts.description or f"Runs the agent {name!r} on a task and answers."
    return ServedAgent(path, parts.agent, parts.constraints, description, template)
