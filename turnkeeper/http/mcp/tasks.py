"""Served calls as tasks, in both eras: the task id is the turn's workflow id, and every answer
is read from the turn (`turn_view`), so any `turnkeeper serve` finds any task.

- 2025-11-25: a `tools/call` with a `task` param answers a `CreateTaskResult` at once;
  `tasks/get`, `tasks/result` (waits for the end), `tasks/list` (the caller's own turns started
  over MCP) and `tasks/cancel` (interrupts the turn).
- 2026-07-28: for a client that names the `io.modelcontextprotocol/tasks` extension in a
  request's capabilities, `tools/call` answers `resultType: "task"`; `tasks/get` and
  `tasks/cancel`. `tasks/update` (answers to `inputRequests`) is bound when `TurnTasks` is given
  a handler for it.

The task methods are the SDK's extension methods (`Extension.methods`); the one thing served
beside them is the 2025 task-augmented `tools/call`, through `Server.middleware` (`calls_as_tasks`)
because the SDK checks every `tools/call` result of a handshake-era session against
`CallToolResult`, which a `CreateTaskResult` is not (the SDK leaves 2025 tasks out: "tasks/*
deliberately absent").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any, Final

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding, RequestHandler
from mcp.server.lowlevel import Server
from mcp.server.mcpserver.server import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    CallToolRequestParams,
    CancelTaskRequestParams,
    GetTaskPayloadRequestParams,
    GetTaskRequestParams,
    PaginatedRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from turnkeeper.http import audit
from turnkeeper.http.access import MAX_PAGE
from turnkeeper.http.decisions import intervene
from turnkeeper.http.errors import ApiError
from turnkeeper.http.mcp import task_wire
from turnkeeper.http.mcp.agents import TURN_ID_PREFIX
from turnkeeper.http.mcp.calls import (
    argument_problem,
    call_tool,
    called_agent,
    start,
    task_argument,
)
from turnkeeper.http.mcp.results import call_result, refusal, state_status
from turnkeeper.http.mcp.serving import Serving, mcp_error
from turnkeeper.http.mcp.turn_view import outcome, view
from turnkeeper.http.turns import UPDATE_INTERRUPT

# The era of the core `tasks` utility.
LEGACY_TASKS_VERSION: Final = "2025-11-25"
CANCEL_REASON: Final = "the MCP task was cancelled"
# The audit line's action of a task cancelled through the MCP endpoint (`audit.line`).
AUDIT_INTERRUPT: Final = "mcp:interrupt"
# How long a 2025 `tasks/cancel` waits for the turn to stop before it answers the task as it is.
CANCEL_WAIT_S: Final = 10.0


class TurnTasks(Extension):
    """The task methods over turns, for both eras (module docstring)."""

    identifier = task_wire.TASKS_EXTENSION

    def __init__(self, serving: Serving, update: RequestHandler | None = None) -> None:
        self.serving = serving
        self.update = update

    def methods(self) -> Sequence[MethodBinding]:
        legacy = frozenset({LEGACY_TASKS_VERSION})
        bindings = [
            MethodBinding("tasks/get", GetTaskRequestParams, self.get),
            MethodBinding("tasks/cancel", CancelTaskRequestParams, self.cancel),
            MethodBinding("tasks/result", GetTaskPayloadRequestParams, self.result, legacy),
            MethodBinding("tasks/list", PaginatedRequestParams, self.list, legacy),
        ]
        if self.update is not None:
            modern = frozenset(MODERN_PROTOCOL_VERSIONS)
            bindings.append(MethodBinding("tasks/update", _UpdateParams, self.update, modern))
        return bindings

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> HandlerResult:
        """`tools/call`: a task for a 2026 client that takes tasks, else a plain call."""
        if not _modern(ctx) or not _takes_tasks(ctx):
            return await call_tool(self.serving, ctx, params)
        agent = called_agent(self.serving, params)
        problem = argument_problem(params.arguments)
        if problem:
            return refusal(problem)  # as for a plain call: for the caller's model to correct
        identity = self.serving.identity(ctx)
        workflow_id = await start(self.serving, identity, agent, task_argument(params))
        now = datetime.now(UTC)
        created = task_wire.modern_task(workflow_id, "working", "started", now, now)
        return {"resultType": "task", **created}

    async def calls_as_tasks(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Server middleware: a 2025-11-25 `tools/call` with a `task` param starts the turn
        and answers its `CreateTaskResult`; anything else goes on down the chain."""
        raw = ctx.params if isinstance(ctx.params, Mapping) else {}
        if ctx.method != "tools/call" or _modern(ctx) or raw.get("task") is None:
            return await call_next(ctx)
        params = CallToolRequestParams.model_validate(raw, by_name=False)
        agent = called_agent(self.serving, params)
        problem = argument_problem(params.arguments)
        if problem:
            # A task-augmented call answers a task or an error: no tool result to say it in.
            raise MCPError(INVALID_PARAMS, problem)
        identity = self.serving.identity(ctx)
        workflow_id = await start(self.serving, identity, agent, task_argument(params))
        now = datetime.now(UTC)
        return {"task": task_wire.legacy_task(workflow_id, "working", "started", now, now)}

    async def get(
        self, ctx: ServerRequestContext[Any, Any], params: GetTaskRequestParams
    ) -> HandlerResult:
        """`tasks/get`: the turn as it stands (with its result once ended, in 2026)."""
        self._check_extension(ctx)
        identity = self.serving.identity(ctx)
        turn = await self.serving.visible(identity, params.task_id)
        current = await self._view(params.task_id)
        if not _modern(ctx):
            return task_wire.legacy_view(current)
        requests: dict[str, Any] = {}
        if current.turn_status is not None and self.serving.input_requests is not None:
            requests = await self.serving.input_requests(ctx, identity, turn, current.turn_status)
        return task_wire.modern_view(current, turn.request.agent.output_schema, requests)

    async def result(
        self, ctx: ServerRequestContext[Any, Any], params: GetTaskPayloadRequestParams
    ) -> HandlerResult:
        """`tasks/result` (2025-11-25): waits for the turn's end; its tool result."""
        identity = self.serving.identity(ctx)
        turn = await self.serving.visible(identity, params.task_id)
        ending = outcome(self.serving.turns, params.task_id)
        asking = self.serving.task_result
        try:
            ended = await (asking(ctx, identity, params.task_id, ending) if asking else ending)
        except ApiError as error:
            raise mcp_error(error, params.task_id) from None
        result = call_result(ended, turn.request.agent.output_schema)
        return task_wire.related(result, params.task_id)

    async def list(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams
    ) -> HandlerResult:
        """`tasks/list` (2025-11-25): the caller's own turns started over MCP, newest first,
        in one page (`MAX_PAGE`), as the turns' search attributes say."""
        if params.cursor is not None:
            raise MCPError(INVALID_PARAMS, f"no such cursor {params.cursor!r}")
        identity = self.serving.identity(ctx)
        try:
            found = await self.serving.turns.list_turns(None, identity.name, MAX_PAGE)
        except ApiError as error:
            raise mcp_error(error, "") from None
        tasks = [
            task_wire.legacy_task(
                turn.workflow_id,
                state_status(turn.state),
                turn.state or "starting",
                turn.started,
                turn.started,
            )
            for turn in found
            if turn.workflow_id.startswith(TURN_ID_PREFIX)
        ]
        return {"tasks": tasks}

    async def cancel(
        self, ctx: ServerRequestContext[Any, Any], params: CancelTaskRequestParams
    ) -> HandlerResult:
        """`tasks/cancel`: the turn's `interrupt`, as the caller (who must be one who may
        steer it, as over the API); it ends with its partial report, its task `cancelled`.
        2025-11-25 answers the task once the turn stopped (`CANCEL_WAIT_S` at most), 2026-07-28
        an acknowledgement at once."""
        self._check_extension(ctx)
        identity = self.serving.identity(ctx)
        payload = {"reason": CANCEL_REASON, "author": identity.name}
        try:
            await intervene(self.serving.turns, params.task_id, UPDATE_INTERRUPT, payload, identity)
        except ApiError as error:
            audit.line(identity, AUDIT_INTERRUPT, params.task_id, error.status)
            raise mcp_error(error, params.task_id) from None
        audit.line(identity, AUDIT_INTERRUPT, params.task_id, 200)
        if _modern(ctx):
            return {}  # the extension's acknowledgement: cancelling is eventually consistent
        # 2025: the answer is the task, which says `cancelled` once the turn has stopped at
        # its next safe point (at once for a turn that waits for a person).
        with anyio.move_on_after(CANCEL_WAIT_S), suppress(ApiError):
            await outcome(self.serving.turns, params.task_id)  # `_view` says what failed
        return task_wire.legacy_view(await self._view(params.task_id))

    async def _view(self, workflow_id: str) -> Any:
        try:
            return await view(self.serving.turns, workflow_id)
        except ApiError as error:
            raise mcp_error(error, workflow_id) from None

    @staticmethod
    def _check_extension(ctx: ServerRequestContext[Any, Any]) -> None:
        if _modern(ctx):
            require_client_extension(ctx, task_wire.TASKS_EXTENSION)


class _UpdateParams(GetTaskRequestParams):
    """`tasks/update`: the task, and the answers to its `inputRequests`."""

    input_responses: dict[str, Any]


def bind(server: Server[Any], extension: Extension) -> None:
    """Serves `extension`'s methods on a lowlevel `server` and advertises it, as
    `MCPServer(extensions=…)` does (the endpoint serves a lowlevel `Server`: its tools are the
    agent files, not Python functions). A method restricted to some protocol versions answers
    "method not found" at the others."""
    for binding in extension.methods():
        server.add_request_handler(binding.method, binding.params_type, _gated(binding))
    server.extensions[extension.identifier] = extension.settings()


def _gated(binding: MethodBinding) -> RequestHandler:
    versions = binding.protocol_versions
    if versions is None:
        return binding.handler

    async def gated(ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        if ctx.protocol_version not in versions:
            raise MCPError(METHOD_NOT_FOUND, "Method not found", binding.method)
        return await binding.handler(ctx, params)

    return gated


def _modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _takes_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    declared = capabilities.extensions if capabilities else None
    return bool(declared) and task_wire.TASKS_EXTENSION in declared
