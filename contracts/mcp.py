"""MCP tools as the workflow sees them: the activity inputs and results, and their names.

An MCP tool is offered to the model as `mcp__<server>__<tool>`, so two servers may both have a
`search` tool and a worker tool can never be shadowed by one. The functions here are pure (no
I/O), so the workflow can tell an MCP call from a worker or external one deterministically.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from pydantic import Field, JsonValue
from turnkeeper.contracts.activity_io import ToolCallResult
from turnkeeper.contracts.claim_check import ClaimChecked
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.mcp_elicitation import ElicitationAnswer
from turnkeeper.contracts.tools import ToolDefinition
from turnkeeper.contracts.turn import TOOL_NAME_PATTERN

# Temporal activity names: never rename one after a release, in-flight histories refer to them.
ACTIVITY_MCP_LIST_TOOLS: Final = "mcp_list_tools"
ACTIVITY_MCP_CALL_TOOL: Final = "mcp_call_tool"
ACTIVITY_MCP_START_TASK: Final = "mcp_start_task"
ACTIVITY_MCP_POLL_TASK: Final = "mcp_poll_task"
ACTIVITY_MCP_CANCEL_TASK: Final = "mcp_cancel_task"

TaskSupport = Literal["forbidden", "optional", "required"]
"""Whether a tool's calls may be answered with a task (the 2025-11-25 `execution.taskSupport`)."""
TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TaskProtocol = Literal["2025-11-25", "2026-07-28"]
"""The protocol revision a task was created in: it decides how its result is fetched."""
TERMINAL_TASK_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})

MCP_TOOL_PREFIX: Final = "mcp__"
_SEPARATOR: Final = "__"
MAX_TOOL_NAME_LENGTH: Final = 64  # as TOOL_NAME_PATTERN, the model API's pattern, allows
SERVER_NAME_PATTERN: Final = re.compile(r"[a-z0-9_-]+")
# Room for at least a one-character tool name after `mcp__<server>__`.
MAX_SERVER_NAME_LENGTH: Final = MAX_TOOL_NAME_LENGTH - len(MCP_TOOL_PREFIX) - len(_SEPARATOR) - 1
_NOT_IN_TOOL_NAMES: Final = re.compile(r"[^a-zA-Z0-9_-]")


class McpToolSpec(ContractModel):
    """One tool of one MCP server, as discovered at the start of a turn."""

    name: str
    """The qualified name the model sees, `mcp__<server>__<tool>`."""
    server: str
    """The server's name in the worker's MCP configuration."""
    tool: str
    """The tool's name on that server (before sanitising)."""
    description: str = ""
    """What the server says of the tool; the model reads it."""
    input_schema: dict[str, JsonValue] = Field(default_factory=lambda: {"type": "object"})
    """The JSON Schema of the tool's arguments, as the server gives it."""
    timeout_s: float = 60.0
    """How long one call may run before it becomes an `is_error` result."""
    activity_timeout_s: float = 160.0
    """The start-to-close timeout the `mcp_call_tool` activity needs to answer in every case:
    checking or re-opening the connection, then the call."""
    read_only_hint: bool = False
    """The server says the tool changes nothing. A hint from the server, not a guarantee: use it
    for conveniences, never to skip an approval."""
    idempotent_hint: bool = False
    """The server says repeating a call has no further effect (or the tool is read-only), so a
    call interrupted by a lost worker may be retried. Also a hint."""
    task_support: TaskSupport = Field(
        default="forbidden",
        # Left out when it says nothing new, so that listings and carried turns without tasks
        # keep the payloads they had (a build before tasks reads them back unchanged).
        exclude_if=lambda support: support == "forbidden",
    )
    """Whether the server may answer a call with a task that the turn then polls: the tool's
    2025-11-25 `execution.taskSupport`, or `optional` for every tool of a 2026-07-28 server that
    advertises the `io.modelcontextprotocol/tasks` extension (the server decides per call).
    Listings recorded before tasks have no such field and read as `forbidden`."""

    def definition(self) -> ToolDefinition:
        """The tool as the model is offered it."""
        return ToolDefinition(
            name=self.name, description=self.description, input_schema=self.input_schema
        )


class McpListToolsInput(ContractModel):
    """Which servers to list: `None` lists every server the worker is configured with."""

    servers: list[str] | None = None
    """The servers' names in the worker's MCP configuration."""
    turn_id: str | None = None
    """Only to correlate the worker's logs with the turn."""


class McpListToolsResult(ContractModel):
    """The tools of the servers that answered, and one sentence per server that did not (a
    server that is down costs its tools, never the turn)."""

    tools: list[McpToolSpec] = Field(default_factory=list)
    """The tools of the servers that answered."""
    errors: list[str] = Field(default_factory=list)
    """One sentence per server that did not answer."""


class McpCallInput(ContractModel, ClaimChecked):
    """The `mcp_call_tool` activity's input: one call of an MCP tool that the model made."""

    turn_id: str = ""
    """As in ModelCallInput."""
    call_id: str
    """The call's id."""
    name: str
    """The qualified name, as the model called it."""
    input: dict[str, JsonValue] = Field(default_factory=dict)
    """The arguments."""
    input_responses: dict[str, ElicitationAnswer] | None = None
    """2026-07-28: the answers to the server's questions of the previous round, by their key."""
    request_state: str | None = None
    """2026-07-28: the server's `requestState` of the previous round, echoed."""

    @property
    def idempotency_key(self) -> str:
        return f"{self.turn_id}/{self.call_id}"


class McpTaskHandle(ContractModel):
    """A task an MCP server answered a call with: what a poll needs, kept in history so that a
    worker that restarts polls the same task."""

    server: str
    """The server's name in the worker's MCP configuration."""
    tool: str
    """The qualified name of the tool whose call it is."""
    task_id: str
    """The server's id of the task."""
    protocol: TaskProtocol
    """The revision it was created in: 2025-11-25 fetches the result with `tasks/result`,
    2026-07-28 finds it in the `tasks/get` answer."""
    status: TaskStatus = "working"
    """The status the server last reported."""
    status_message: str | None = None
    """What the server last said of it, for people watching the turn."""
    poll_interval_ms: int | None = None
    """How often the server asks to be polled; the turn bounds it."""


class McpTaskStartResult(ContractModel, ClaimChecked):
    """The `mcp_start_task` activity's result: a task to poll, or the call's result when the
    server answered at once or could not be reached (then exactly as `mcp_call_tool`'s)."""

    task: McpTaskHandle | None = None
    """The task, when the server answered with one."""
    result: ToolCallResult | None = None
    """The stored `tool_result` block otherwise."""


class McpTaskInput(ContractModel):
    """The input of `mcp_poll_task` and `mcp_cancel_task`: one task of one call of the turn."""

    turn_id: str = ""
    """Only to correlate the worker's logs with the turn."""
    call_id: str
    """The id of the tool call the task answers."""
    task: McpTaskHandle
    """The task."""


class McpTaskPollResult(ContractModel, ClaimChecked):
    """The `mcp_poll_task` activity's result: the task's status and, once it ended (or the
    server's answer could not be read), the stored `tool_result` block the model gets."""

    task: McpTaskHandle
    """The task with the status, message and poll interval the server reported."""
    result: ToolCallResult | None = None
    """Set when the call is settled: the task completed, failed or was cancelled, or the
    server's answer was not a task the turn can follow (an `is_error` result)."""
    input_requests: dict[str, JsonValue] | None = None
    """What the server asks of the client while the task is `input_required` (2026-07-28
    `inputRequests`), for the elicitation path to answer."""


class McpTaskCancelResult(ContractModel):
    """The `mcp_cancel_task` activity's result."""

    cancelled: bool
    """The server acknowledged `tasks/cancel`."""
    detail: str = ""
    """Why it did not, when it did not (the task had ended, the server was down)."""


def validate_server_name(server: str) -> str:
    """`server` if it can be part of a qualified tool name.

    Raises:
        ValueError: it does not match `[a-z0-9_-]+`, contains `__` or ends with `_` (either
            would make `mcp__<server>__<tool>` ambiguous), or leaves no room for a tool name.
    """
    if not SERVER_NAME_PATTERN.fullmatch(server):
        raise ValueError(f"MCP server name {server!r} must match [a-z0-9_-]+")
    if _SEPARATOR in server or server.endswith("_"):
        raise ValueError(
            f"MCP server name {server!r} must not contain '__' or end with '_': "
            "'__' separates server and tool in mcp__<server>__<tool>"
        )
    if len(server) > MAX_SERVER_NAME_LENGTH:
        raise ValueError(
            f"MCP server name {server!r} is {len(server)} characters; at most "
            f"{MAX_SERVER_NAME_LENGTH} leave room for a tool name within the 64 the model API "
            "allows"
        )
    return server


def qualified_name(server: str, tool: str) -> str:
    """The name the model sees for `tool` of `server`: `mcp__<server>__<tool>`, with every
    character the model API does not allow in a tool name replaced by `_`.

    Raises:
        ValueError: the server name is invalid, the tool name is empty, or the result is longer
            than 64 characters (it is never cut short: two long names could then collide).
    """
    validate_server_name(server)
    if not tool:
        raise ValueError(f"MCP server {server!r} lists a tool with an empty name")
    name = f"{MCP_TOOL_PREFIX}{server}{_SEPARATOR}{_NOT_IN_TOOL_NAMES.sub('_', tool)}"
    if not re.fullmatch(TOOL_NAME_PATTERN, name):
        raise ValueError(
            f"tool {tool!r} of MCP server {server!r} cannot be offered: {name!r} is {len(name)} "
            f"characters, more than the {MAX_TOOL_NAME_LENGTH} the model API allows "
            "(a shorter server name in the MCP config makes room)"
        )
    return name


def is_mcp_tool_name(name: str) -> bool:
    """Whether the model's tool name is meant for an MCP server."""
    return name.startswith(MCP_TOOL_PREFIX)


def split_qualified_name(name: str) -> tuple[str, str]:
    """`(server, tool)` of a qualified name; `tool` as sanitised, which is the server's own name
    unless that had characters the model API does not allow.

    Raises:
        ValueError: `name` is not of the form `mcp__<server>__<tool>`.
    """
    server, separator, tool = name.removeprefix(MCP_TOOL_PREFIX).partition(_SEPARATOR)
    if not is_mcp_tool_name(name) or not separator or not server or not tool:
        raise ValueError(f"{name!r} is not an MCP tool name of the form mcp__<server>__<tool>")
    return server, tool
