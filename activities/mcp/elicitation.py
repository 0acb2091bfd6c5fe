"""MCP servers that ask for input during a call, on the activity's side.

2026-07-28 (`call_tool`): the call is sent with `allow_input_required`, so a server's
`InputRequiredResult` comes back to the workflow (`McpCallOutcome.input_required`) instead of
being driven here; the workflow asks a person and runs the activity again with the answers and
the server's `requestState`. Nothing is held open while the person thinks.

Handshake era (`ElicitationRouter`, `CallAsker`): the server sends `elicitation/create` on the
call's session and waits for the answer there, so the activity must wait too. Each connection's
client has one elicitation callback (a connection is shared by the worker's calls), which hands
the question to the call in flight on that connection; the call's `CallAsker` sends the
`mcp_elicitation` update to its own workflow and waits for the answer (heartbeating goes on
around the call), with the call's own deadline stopped meanwhile. JSON-RPC over stdio does not
say which call a server request belongs to: with several calls in flight on one connection, the
question is shown with the earliest. A worker that dies while a person thinks loses the session
and the question with it; the call's retry asks again (workflows/tools/mcp_elicitation.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from mcp import MCPError
from mcp.client.session import ClientRequestContext
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
)
from mcp_types.jsonrpc import HEADER_MISMATCH
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from temporalio import activity
from temporalio.client import Client, RPCTimeoutOrCancelledError, WorkflowUpdateFailedError
from temporalio.service import RPCError
from turnkeeper.contracts.mcp import McpCallInput
from turnkeeper.contracts.mcp_elicitation import (
    UPDATE_MCP_ELICITATION,
    ElicitationAnswer,
    ElicitationAsked,
    McpElicitationInput,
    McpInputRequired,
)

from turnkeeper.ground.logs import get_logger

if TYPE_CHECKING:  # connections.py builds each connection's router from this module
    from turnkeeper.activities.mcp.connections import McpConnection

log = get_logger(__name__)


class CallAsker:
    """Asks the person for one call: built in the activity (which knows its workflow, attempt
    and client), called from the connection's receive loop (which does not)."""

    def __init__(self, call: McpCallInput, deadline: asyncio.Timeout | None = None) -> None:
        info = activity.info()
        self._call_id = call.call_id
        self._workflow_id = info.workflow_id
        self._attempt = info.attempt
        self._client = _temporal_client()
        self._deadline = deadline

    async def ask(self, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        """The person's answer to the server's question."""
        if not isinstance(params, ElicitRequestFormParams):
            # URL mode sends the person to the server's own page; no inbox can show that yet.
            return ElicitResult(action="decline")
        if self._client is None:
            return ErrorData(code=INVALID_REQUEST, message="no person can be asked here")
        asked = ElicitationAsked(message=params.message, requested_schema=_schema(params))
        question = McpElicitationInput(call_id=self._call_id, attempt=self._attempt, asked=asked)
        handle = self._client.get_workflow_handle(self._workflow_id)
        log.info("mcp_elicitation_asked", call_id=self._call_id, attempt=self._attempt)
        try:
            with self._deadline_stopped():
                answer = await handle.execute_update(
                    UPDATE_MCP_ELICITATION, question, result_type=ElicitationAnswer
                )
        except (WorkflowUpdateFailedError, RPCError, RPCTimeoutOrCancelledError) as err:
            log.warning("mcp_elicitation_refused", call_id=self._call_id, error=type(err).__name__)
            return ErrorData(code=INTERNAL_ERROR, message="the question could not be asked")
        return ElicitResult(action=answer.action, content=answer.content)

    @contextmanager
    def _deadline_stopped(self) -> Iterator[None]:
        """The call's timeout measures the server, not the person: it stops while they think."""
        deadline = self._deadline
        when = deadline.when() if deadline is not None else None
        if deadline is None or when is None:
            yield
            return
        loop = asyncio.get_running_loop()
        left = when - loop.time()
        deadline.reschedule(None)
        try:
            yield
        finally:
            with contextlib.suppress(RuntimeError):  # the call ended (cancelled) meanwhile
                deadline.reschedule(loop.time() + left)


def _temporal_client() -> Client | None:
    try:
        return activity.client()
    except RuntimeError:  # an activity run outside a worker (ActivityEnvironment without one)
        return None


class ElicitationRouter:
    """One connection's elicitation callback: hands each question to the call in flight."""

    def __init__(self) -> None:
        self._askers: list[CallAsker] = []

    @contextmanager
    def asking(self, asker: CallAsker) -> Iterator[None]:
        """While the block runs, the server's questions go to `asker`."""
        self._askers.append(asker)
        try:
            yield
        finally:
            self._askers.remove(asker)

    async def callback(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        """The SDK's `elicitation_callback`: the answer of the person the call's turn asks."""
        if not self._askers:
            return ErrorData(code=INVALID_REQUEST, message="no tool call is in progress")
        return await self._askers[0].ask(params)


async def call_tool(
    connection: McpConnection, tool: str, call: McpCallInput, timeout_s: float, meta: Any
) -> CallToolResult | McpInputRequired:
    """Calls `tool`, with the call's answers and state of a previous round; a 2026-07-28
    server's questions come back as `McpInputRequired`, a handshake-era server's are asked and
    answered during the call. `timeout_s` bounds the time the server takes, not the person."""
    async with asyncio.timeout(timeout_s) as deadline:
        with connection.elicitations.asking(CallAsker(call, deadline)):
            if connection.client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                return await connection.client.call_tool(tool, call.input, meta=meta)
            return await _call_modern(connection, tool, call, meta)


async def _call_modern(
    connection: McpConnection, tool: str, call: McpCallInput, meta: Any
) -> CallToolResult | McpInputRequired:
    answers = None
    if call.input_responses is not None:
        answers = {k: ElicitResult(**a.model_dump()) for k, a in call.input_responses.items()}
    for relisted in (False, True):
        try:
            result = await connection.client.session.call_tool(
                tool,
                call.input,
                input_responses=answers,  # type: ignore[arg-type]
                request_state=call.request_state,
                meta=meta,
                allow_input_required=True,
            )
        except MCPError as err:
            if err.code != HEADER_MISMATCH or relisted:
                raise
            # As the SDK's own call does: the tool's listing is stale, re-list and send again.
            await connection.client.list_tools()
            continue
        if isinstance(result, InputRequiredResult):
            return _questions(result)
        assert isinstance(result, CallToolResult)
        return result
    raise AssertionError("unreachable")


def _questions(result: InputRequiredResult) -> McpInputRequired:
    asked = []
    for key, request in sorted((result.input_requests or {}).items()):
        if not isinstance(request, ElicitRequest) or not isinstance(
            request.params, ElicitRequestFormParams
        ):
            # Sampling, roots and URL elicitations have no person's form to answer them.
            raise MCPError(INVALID_REQUEST, f"the server asked for {request.method!r}")
        asked.append(
            ElicitationAsked(
                key=key, message=request.params.message, requested_schema=_schema(request.params)
            )
        )
    return McpInputRequired(asked=asked, request_state=result.request_state)


def _schema(params: ElicitRequestFormParams) -> dict[str, Any]:
    return dict(params.requested_schema)
