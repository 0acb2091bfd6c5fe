"""MCP tasks on the wire, in both revisions that have them, read strictly.

2025-11-25 has tasks in the core protocol: a tool lists `execution.taskSupport`, the client asks
for a task with a `task` param on `tools/call`, the server answers `{"task": {...}}`, `tasks/get`
reports the status (`pollInterval`), and `tasks/result` gives the call's result. 2026-07-28 moved
them to the `io.modelcontextprotocol/tasks` extension: the client names the extension in the
request's own capabilities, the server decides per call and answers `resultType: "task"` with the
task's fields inline (`pollIntervalMs`), and `tasks/get` carries the result (or the error) once
the task ended.

The SDK sends neither (its method tables leave `tasks/*` out, and it validates a `tools/call`
answer as a `CallToolResult`), so these requests go through the session's own stamping (protocol
version headers, the per-request `_meta` of 2026-07-28) and its raw dispatcher. That touches two
private attributes of `ClientSession`, pinned by the SDK version in pyproject and exercised by
the suite against the SDK's own server and the reference TypeScript one.
"""

from __future__ import annotations

import copy
from typing import Any, Final, cast, get_args

from mcp import Client
from mcp.types import CallToolResult, Tool
from mcp_types import CLIENT_CAPABILITIES_META_KEY
from pydantic import ValidationError
from turnkeeper.contracts.mcp import TaskProtocol, TaskStatus, TaskSupport

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
MODERN: Final[TaskProtocol] = "2026-07-28"
HANDSHAKE: Final[TaskProtocol] = "2025-11-25"
_STATUSES: Final = frozenset(get_args(TaskStatus))


class BadTaskAnswer(Exception):
    """The server's answer is not a task (or a task's result) the turn can follow; the message
    says what was wrong, for the model."""


def task_protocol(client: Client) -> TaskProtocol | None:
    """How this connection's server runs tool calls as tasks; None when it does not."""
    capabilities = client.server_capabilities
    if client.protocol_version == MODERN:
        return MODERN if TASKS_EXTENSION in (capabilities.extensions or {}) else None
    if client.protocol_version == HANDSHAKE:
        requests = capabilities.tasks.requests if capabilities.tasks else None
        tools = requests.tools if requests else None
        return HANDSHAKE if tools is not None and tools.call is not None else None
    return None


def task_support(client: Client, tool: Tool) -> TaskSupport:
    """Whether calls of `tool` may be answered with a task: its own `execution.taskSupport` in
    2025-11-25; `optional` for any tool of a 2026-07-28 server with the extension."""
    protocol = task_protocol(client)
    if protocol == MODERN:
        return "optional"
    if protocol == HANDSHAKE and tool.execution is not None:
        return tool.execution.task_support or "forbidden"
    return "forbidden"


async def request(
    client: Client, method: str, params: dict[str, Any], timeout_s: float
) -> dict[str, Any]:
    """Sends `method` as the session sends its own requests and returns the raw answer. On a
    2026-07-28 connection the request's own capabilities name the tasks extension: only these
    requests, which can follow a task, say that the client takes one.

    Raises:
        MCPError: the server answered with an error, the request timed out or the connection
            closed.
    """
    session = client.session
    data: dict[str, Any] = {"method": method, "params": params}
    options: dict[str, Any] = {"timeout": timeout_s}
    # `_stamp` and `_dispatcher` are the SDK's private parts (the module's docstring says why).
    session._stamp(data, cast(Any, options))
    meta = data["params"].get("_meta")
    if isinstance(meta, dict) and CLIENT_CAPABILITIES_META_KEY in meta:
        # A copy: the stamp shares one capabilities dict between all of the session's requests.
        capabilities = copy.deepcopy(meta[CLIENT_CAPABILITIES_META_KEY])
        capabilities.setdefault("extensions", {})[TASKS_EXTENSION] = {}
        meta[CLIENT_CAPABILITIES_META_KEY] = capabilities
    dispatcher = session._dispatcher
    return await dispatcher.send_raw_request(method, data["params"], cast(Any, options))


def call_params(
    protocol: TaskProtocol, tool: str, arguments: dict[str, Any], meta: dict[str, Any]
) -> dict[str, Any]:
    """The `tools/call` params that let the server answer with a task."""
    params: dict[str, Any] = {"name": tool, "arguments": arguments, "_meta": dict(meta)}
    if protocol == HANDSHAKE:
        params["task"] = {}  # the server's default time-to-live
    return params


def created_task(protocol: TaskProtocol, answer: dict[str, Any]) -> dict[str, Any] | None:
    """The task of a `tools/call` answer, or None when the server answered with a result.

    Raises:
        BadTaskAnswer: it says it is a task but is not a well-formed one.
    """
    if protocol == HANDSHAKE:
        task = answer.get("task")
        if task is None:
            return None
        if not isinstance(task, dict):
            raise BadTaskAnswer("its 'task' is not an object")
        return checked_task(protocol, cast(dict[str, Any], task))
    if answer.get("resultType") != "task":
        return None
    return checked_task(protocol, answer)


def checked_task(protocol: TaskProtocol, task: dict[str, Any]) -> dict[str, Any]:
    """`task` if it has what a task must have: an id, a known status, a whole-number poll
    interval if any.

    Raises:
        BadTaskAnswer: it does not.
    """
    task_id = task.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise BadTaskAnswer("the task has no 'taskId'")
    if task.get("status") not in _STATUSES:
        raise BadTaskAnswer(f"task {task_id!r} has an unknown status {task.get('status')!r}")
    interval = task.get(poll_interval_key(protocol))
    if interval is not None and (not isinstance(interval, int) or interval < 0):
        raise BadTaskAnswer(f"task {task_id!r} has a poll interval that is not milliseconds")
    message = task.get("statusMessage")
    if message is not None and not isinstance(message, str):
        raise BadTaskAnswer(f"task {task_id!r} has a 'statusMessage' that is not text")
    return task


def poll_interval_key(protocol: TaskProtocol) -> str:
    return "pollIntervalMs" if protocol == MODERN else "pollInterval"


def call_result(answer: Any) -> CallToolResult:
    """A task's result as the `CallToolResult` a plain call would have had.

    Raises:
        BadTaskAnswer: it is not one.
    """
    if not isinstance(answer, dict):
        raise BadTaskAnswer("the task's result is not an object")
    try:
        return CallToolResult.model_validate(answer, by_name=False)
    except ValidationError as err:
        problems = err.error_count()
        raise BadTaskAnswer(f"its result is not a tool result ({problems} problems)") from None


def failure_text(task: dict[str, Any]) -> str:
    """What a failed task says of its failure: the JSON-RPC error (2026-07-28) or its status
    message."""
    error = task.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return cast(str, error["message"])
    message = task.get("statusMessage")
    return message if isinstance(message, str) and message else "no reason given"
