"""A real MCP server (the official SDK's `MCPServer`) that answers long tool calls with tasks
in the 2026-07-28 way: the `io.modelcontextprotocol/tasks` extension, `resultType: "task"` when
the request's own capabilities name the extension, and `tasks/get` / `tasks/cancel` as extension
methods. The SDK serves no tasks itself, so this is the small server a test needs.

Its tasks live in the process, not in a connection, so a worker that reconnects (after a restart)
finds them. `task_stats` is a plain tool that says what the server saw: how many tasks were
created, which were cancelled, how many polls there were, for tests to check from outside.

Run with `--http PORT` (streamable HTTP on 127.0.0.1), as `tests/support/mcp_http_process.py`
does.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp.types import INVALID_PARAMS, CallToolRequestParams, RequestParams

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
POLL_INTERVAL_MS = 200


@dataclass
class _Task:
    task_id: str
    created_at: str
    tool: str = ""
    status: str = "working"
    message: str = "started"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    job: asyncio.Task[None] | None = None
    asking: dict[str, Any] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    updated_at: str = field(default_factory=lambda: _now())


_tasks: dict[str, _Task] = {}
_stats: dict[str, Any] = {"created": 0, "cancelled": [], "polls": 0, "by_tool": {}, "updates": 0}


def _now() -> str:
    return datetime.now(UTC).isoformat()


class TaskIdParams(RequestParams):
    """The params of `tasks/get` and `tasks/cancel`."""

    taskId: str


class TaskUpdateParams(TaskIdParams):
    """The params of `tasks/update`: answers to the task's `inputRequests`, by key."""

    inputResponses: dict[str, Any]


class Tasks(Extension):
    """Runs `research`, `clarify`, `doomed`, `garbled` and `wobbly` as tasks for clients that
    ask for the extension."""

    identifier = TASKS_EXTENSION

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("tasks/get", TaskIdParams, _get),
            MethodBinding("tasks/cancel", TaskIdParams, _cancel),
            MethodBinding("tasks/update", TaskUpdateParams, _answer),
        )

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        runner = _JOBS.get(params.name)
        if runner is None or not _asks_for_tasks(ctx):
            return await call_next(ctx)
        _stats["created"] += 1
        _stats["by_tool"][params.name] = _stats["by_tool"].get(params.name, 0) + 1
        if params.name == "garbled":  # a task answer without its id: the client must refuse it
            return {"resultType": "task", "status": "working", "createdAt": _now()}
        task = _Task(task_id=str(uuid.uuid4()), created_at=_now(), tool=params.name)
        _tasks[task.task_id] = task
        task.job = asyncio.create_task(runner(task, params.arguments or {}))
        return {"resultType": "task", **_wire(task, detailed=False)}


def _asks_for_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = (ctx.meta or {}).get(_CAPABILITIES_META) or {}
    return TASKS_EXTENSION in (capabilities.get("extensions") or {})


def _wire(task: _Task, *, detailed: bool) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "taskId": task.task_id,
        "status": task.status,
        "statusMessage": task.message,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.updated_at,
        "ttlMs": 600_000,
        "pollIntervalMs": POLL_INTERVAL_MS,
    }
    if detailed and task.result is not None:
        answer["result"] = task.result
    if detailed and task.error is not None:
        answer["error"] = task.error
    if detailed and task.status == "input_required":
        answer["inputRequests"] = task.asking
    return answer


async def _get(ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
    _stats["polls"] += 1
    task = _tasks.get(params.taskId)
    if task is None:
        raise MCPError(INVALID_PARAMS, f"no task {params.taskId!r}")
    if task.tool == "wobbly":  # a poll answer the client cannot follow
        return {"resultType": "complete", **_wire(task, detailed=True), "status": "sleeping"}
    return {"resultType": "complete", **_wire(task, detailed=True)}


async def _cancel(ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
    _stats["cancelled"].append(params.taskId)
    task = _tasks.get(params.taskId)
    if task is None:
        raise MCPError(INVALID_PARAMS, f"no task {params.taskId!r}")
    if task.status == "working" and task.job is not None:
        task.job.cancel()
        _update(task, "cancelled", "cancelled by the client")
    return {"resultType": "complete"}


async def _answer(ctx: ServerRequestContext[Any, Any], params: TaskUpdateParams) -> HandlerResult:
    """Takes answers to outstanding questions only: a second answer to a key is refused."""
    _stats["updates"] += 1
    task = _tasks.get(params.taskId)
    if task is None:
        raise MCPError(INVALID_PARAMS, f"no task {params.taskId!r}")
    stale = set(params.inputResponses) - set(task.asking)
    if stale:
        raise MCPError(INVALID_PARAMS, f"no outstanding input requests {sorted(stale)}")
    task.answers.update(params.inputResponses)
    task.asking = {}
    task.answered.set()
    _update(task, "working", "answered")
    return {"resultType": "complete"}


def _update(task: _Task, status: str, message: str) -> None:
    task.status, task.message, task.updated_at = status, message, _now()


async def _research(task: _Task, arguments: dict[str, Any]) -> None:
    await asyncio.sleep(float(arguments.get("seconds", 2.0)))
    text = f"report on {arguments.get('topic', '?')}"
    task.result = {"content": [{"type": "text", "text": text}], "isError": False}
    _update(task, "completed", "done")


async def _doomed(task: _Task, arguments: dict[str, Any]) -> None:
    await asyncio.sleep(float(arguments.get("seconds", 0.5)))
    task.error = {"code": -32603, "message": "the research database is gone"}
    _update(task, "failed", "the research database is gone")


async def _clarify(task: _Task, arguments: dict[str, Any]) -> None:
    await asyncio.sleep(0.3)
    task.asking = {
        "scope": {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": f"Which {arguments.get('topic', '?')} do you mean?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"meaning": {"type": "string"}},
                    "required": ["meaning"],
                },
            },
        }
    }
    _update(task, "input_required", "which one?")
    await task.answered.wait()
    answer = task.answers["scope"]
    if answer.get("action") == "accept":
        text = f"report on {arguments.get('topic')} as {answer['content']['meaning']}"
    else:
        text = f"no report: the person chose {answer.get('action')}"
    await asyncio.sleep(0.3)
    task.result = {"content": [{"type": "text", "text": text}], "isError": False}
    _update(task, "completed", "done")


_JOBS = {
    "clarify": _clarify,
    "research": _research,
    "doomed": _doomed,
    "garbled": _research,
    "wobbly": _research,
}

server = MCPServer("turnkeeper-tasks-demo", extensions=[Tasks()])


@server.tool()
def research(topic: str, seconds: float = 2.0) -> str:
    """Researches `topic` for `seconds` (as a task where the client takes tasks)."""
    return f"report on {topic}"


@server.tool()
def clarify(topic: str) -> str:
    """Researches `topic` as a task that first asks which meaning of it is wanted."""
    return f"report on {topic}"


@server.tool()
def doomed(seconds: float = 0.5) -> str:
    """A task that fails after `seconds`."""
    raise RuntimeError("the research database is gone")


@server.tool()
def garbled() -> str:
    """Answers a task-capable client with a task that has no id."""
    return "garbled"


@server.tool()
def wobbly() -> str:
    """A task whose polls answer with a status that does not exist."""
    return "wobbly"


@server.tool()
def task_stats() -> dict[str, Any]:
    """What the server saw of tasks: created, cancelled (their ids), polls, by tool."""
    return _stats


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT", required=True)
    port = parser.parse_args().http
    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
