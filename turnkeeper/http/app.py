"""The ASGI app of `turnkeeper serve`: the `/v1/…` endpoints, the approval inbox at `/` and the
OpenAPI document at `/openapi.json`. `create_app` takes the turn operations (`Turns`) and the
token file, so a test can run it in-process over a fake of the first."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, FastAPI, Header, Path, Query, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ConfigDict, Field, field_validator

from turnkeeper.contracts.contract_model import ContractModel, build_all
from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.signals import DecisionRecord, PendingKind, TurnState, TurnStatus
from turnkeeper.contracts.tenants import TENANT_NAME_PATTERN, TenantCaps, TenantSpend
from turnkeeper.contracts.turn_ids import turn_id_problem
from turnkeeper.contracts.write_preview import WritePreview
from turnkeeper.http import audit
from turnkeeper.http.access import (
    DEFAULT_PAGE,
    MAX_PAGE,
    billed_request,
    check_operator,
    check_tenant_reader,
    may_decide,
    visible_status,
    visible_turn,
    visible_turns,
)
from turnkeeper.http.agent_events import add_events
from turnkeeper.http.approvals import ApprovalBudget, AttachmentNote
from turnkeeper.http.auth import FailedSignIns, sign_in
from turnkeeper.http.caller_request import CallerRequest
from turnkeeper.http.chat import add_chat
from turnkeeper.http.conversations import Conversations
from turnkeeper.http.decisions import DecisionBody, cancel_as, decide, intervene
from turnkeeper.http.errors import refusal
from turnkeeper.http.inbox import add_inbox
from turnkeeper.http.schedules import add_schedules
from turnkeeper.http.tokens import Identity, TokenStore

if TYPE_CHECKING:
    from turnkeeper.http.evals import EvalRuns
from turnkeeper.http.turns import UPDATE_INTERRUPT, UPDATE_STEER, ApiError, Turns, TurnService

# Under the idle timeouts of common proxies (nginx 60 s, AWS ALB 60 s).
KEEPALIVE_S = 15.0


class StartTurnBody(CallerRequest):
    """`POST /v1/turns`: a `TurnRequest`, and optionally the workflow id to give the turn."""

    id: str | None = None
    """The workflow id (default: `turn-<agent id>-<random>`): a letter or digit, then letters,
    digits and `. _ - : @`, at most 200 characters, and none of the runtime's own ids (starting
    `approval-cache-`, `turnkeeper-tenant/` or `rate-limit-`)."""

    @field_validator("id")
    @classmethod
    def _turn_id(cls, workflow_id: str | None) -> str | None:
        problem = turn_id_problem(workflow_id) if workflow_id is not None else None
        if problem:
            raise ValueError(problem)
        return workflow_id


class Started(ContractModel):
    workflow_id: str
    """The turn's workflow id."""


class SteerBody(ContractModel):
    model_config = ConfigDict(extra="forbid")

    message: str = Field(min_length=1)
    """The message that joins the conversation before the turn's next model call."""


class InterruptBody(ContractModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = ""
    """Why the turn is stopped."""


class ListedTurn(ContractModel):
    """One turn of `GET /v1/turns`, from its search attributes."""

    workflow_id: str
    """The turn."""
    state: str | None
    """Its `TurnState` (None until its first workflow task ran)."""
    agent_id: str
    """Its agent."""
    cost_usd: float
    """Its cost so far."""
    started_by: str | None
    """The identity that started it through the API (None: started otherwise)."""
    started: datetime
    """When it started."""


class Approval(ContractModel):
    """One call waiting for the caller's decision."""

    workflow_id: str
    """The turn."""
    agent_id: str
    """The turn's agent."""
    call_id: str
    """The call to decide."""
    tool: str
    """The call's tool."""
    input: dict[str, Any]
    """The call's input as the model sent it."""
    since: datetime
    """When it started waiting."""
    cost_usd: float
    """The turn's cost so far."""
    kind: PendingKind = "approval"
    """`approval`: decide the call; `elicitation`: answer its MCP server's question (`message`)
    with an `input` that fits `requested_schema`, decline, or cancel."""
    message: str | None = None
    """Of an `elicitation`: what the server asks."""
    requested_schema: dict[str, Any] | None = None
    """Of an `elicitation`: the JSON Schema the answer must fit."""
    task: str = ""
    """The task of the turn where the call waits (`waits_in`, else `workflow_id`)."""
    said: str | None = None
    """What the model wrote before the call, in the same answer (its end, when long)."""
    preview: WritePreview | None = None
    """Of a built-in `write_file` call: its diff against the file as the worker saw it."""
    waits_in: str | None = None
    """Of a sub-agent's call: the sub-agent's turn where it waits. The call is listed and
    decided at `workflow_id`, the turn a person started, which passes the decision on."""
    depth: int = 0
    """How many sub-agent levels below `workflow_id` the call waits (0: in it)."""
    root_task: str = ""
    """The task of `workflow_id` (for a sub-agent's call, `task` is the sub-agent's)."""
    budget: ApprovalBudget | None = None
    """Where the turn where the call waits stands against its budgets."""
    attachments: list[AttachmentNote] = []
    """The images and documents of `root_task`: kind, name, media type, size and reference,
    never the bytes."""


def _caller(request: Request) -> Identity:
    """The identity the sign-in middleware found for this request."""
    identity: Identity = request.state.identity
    return identity


def _operator(request: Request) -> Identity:
    """The caller, when an operator: a dependency, so a member learns 403 before anything of
    its body is read."""
    identity = _caller(request)
    check_operator(identity, "manage tenants")
    return identity


# Module level, not inside create_app: FastAPI resolves the annotations by name.
Caller = Annotated[Identity, Depends(_caller)]
Operator = Annotated[Identity, Depends(_operator)]
TenantPath = Annotated[str, Path(pattern=TENANT_NAME_PATTERN)]


def create_app(
    turns: Turns,
    tokens: TokenStore,
    *,
    cors_origins: list[str] | None = None,
    failures: FailedSignIns | None = None,
    conversations: Conversations | None = None,
    evals: EvalRuns | None = None,
) -> FastAPI:
    """The app over `turns`, signing callers in with `tokens`; CORS is off unless
    `cors_origins` names the browser origins allowed to call. `conversations`: the served
    agents' (`--agents`), which the chat protocols' routes continue; None: no agents. `evals`:
    the evaluation runs `/v1/evals` reads; None: over `turns`' client, when it has one."""
    build_all()  # the routes' models built before FastAPI wraps them in its own annotations
    app = FastAPI(
        title="turnkeeper",
        summary="Start, follow, approve, steer and stop durable agent turns.",
        version="1",
        # Swagger UI and ReDoc load their scripts from a CDN; the server may be offline.
        docs_url=None,
        redoc_url=None,
    )
    failed = failures or FailedSignIns()
    app.state.conversations = conversations
    audit.always_audited()
    if cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=cors_origins,
            allow_methods=["GET", "POST", "PUT", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
        )

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, error: ApiError) -> JSONResponse:
        return refusal(error)

    # Sign-in before anything else reads the request: a caller without a token learns
    # nothing, not even whether its body would validate. The audit line is written here, once
    # the answer is known, so that refusals of every kind are in it.
    @app.middleware("http")
    async def _sign_in(request: Request, call_next: Any) -> Response:
        if not request.url.path.startswith("/v1/") or request.method == "OPTIONS":
            return await call_next(request)
        address = request.client.host if request.client else "unknown"
        try:
            identity = sign_in(tokens, failed, request.headers.get("authorization"), address)
        except ApiError as error:
            refused = await _api_error(request, error)
            audit.record(request, None, refused.status_code)
            return refused
        request.state.identity = identity
        try:
            response: Response = await call_next(request)
        except Exception:
            audit.record(request, identity, 500)  # a defect answers 500: its line is written too
            raise
        audit.record(request, identity, response.status_code)
        return response

    add_inbox(app)
    if conversations is not None and isinstance(turns, TurnService):
        # Imported only to serve agents: AG-UI's interrupts read the MCP SDK's errors.
        from turnkeeper.http.agui import add_ag_ui

        # An AG-UI run ends with its turn's result, read from Temporal (a fake `Turns` has none).
        add_ag_ui(app, turns, conversations)
    if conversations is not None:
        # Imported only to serve agents: the A2A SDK costs a plain server's start a second.
        from turnkeeper.http.a2a import add_a2a

        add_a2a(app, turns, tokens, failed, conversations)
    if conversations is not None:
        add_chat(app, conversations)
        add_events(app, conversations)
    add_schedules(app, turns)
    # Imported here: its routes take the `Caller` of this module, which must be loaded first.
    from turnkeeper.http.evals import EvalRunService, add_evals

    if evals is None and isinstance(turns, TurnService):
        evals = EvalRunService(turns.client)
    if evals is not None:
        add_evals(app, evals)
    if isinstance(turns, TurnService):
        # Imported here for the reason evals are: its routes take this module's `Caller`.
        from turnkeeper.http.turn_files import add_turn_files

        add_turn_files(app, turns)

    @app.get("/v1/whoami")
    async def whoami(identity: Caller) -> dict[str, str | None]:
        """The identity the token signs in as, its role and its tenant."""
        return {"name": identity.name, "role": identity.role, "tenant": identity.tenant}

    @app.post("/v1/turns", status_code=201)
    async def start(body: StartTurnBody, identity: Caller, http: Request) -> Started:
        """Start a turn, owned by the caller; a member's is billed to its tenant."""
        request = billed_request(body.turn_request(), identity)
        http.state.turn = body.id
        workflow_id = await turns.start(request, body.id, identity.name)
        http.state.turn = workflow_id
        return Started(workflow_id=workflow_id)

    @app.get("/v1/turns")
    async def list_turns(
        identity: Caller,
        state: TurnState | None = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = DEFAULT_PAGE,
    ) -> list[ListedTurn]:
        """The turns the caller may see, newest first (`state`: only those in it)."""
        found = await visible_turns(turns, identity, state, limit)
        return [ListedTurn.model_validate(t, from_attributes=True) for t in found]

    @app.get("/v1/turns/{workflow_id:path}/events")
    async def events(
        workflow_id: str,
        identity: Caller,
        last_event_id: Annotated[int | None, Header(ge=0)] = None,
    ) -> StreamingResponse:
        """Server-Sent Events of the turn's event stream; `Last-Event-ID` resumes after it."""
        await visible_turn(turns, workflow_id, identity)  # 404 before the stream starts
        return StreamingResponse(
            _sse(turns, workflow_id, last_event_id),
            media_type="text/event-stream",
            # A proxy must pass each event on at once (nginx buffers otherwise).
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    # After the routes under it: a `path` id would take their suffix in (`<id>/events`).
    @app.get("/v1/turns/{workflow_id:path}")
    async def status(workflow_id: str, identity: Caller) -> TurnStatus:
        """The turn's status query."""
        _, turn_status = await visible_status(turns, workflow_id, identity)
        return turn_status

    @app.get("/v1/approvals")
    async def approvals(identity: Caller) -> list[Approval]:
        """Every pending approval the caller may decide, across turns."""
        return [
            Approval.model_validate(w, from_attributes=True)
            for w in await turns.waiting_approvals()
            if may_decide(identity, w.approvers, w.started_by)
        ]

    @app.post("/v1/turns/{workflow_id:path}/decisions")
    async def decisions(
        workflow_id: str, body: DecisionBody, identity: Caller
    ) -> list[DecisionRecord]:
        """Approve or reject a waiting call as the token's identity."""
        return await decide(turns, workflow_id, body, identity)

    @app.post("/v1/turns/{workflow_id:path}/steer")
    async def steer(workflow_id: str, body: SteerBody, identity: Caller) -> Any:
        """Add a message to the conversation before the turn's next model call."""
        payload = {"message": body.message, "author": identity.name}
        return await intervene(turns, workflow_id, UPDATE_STEER, payload, identity)

    @app.post("/v1/turns/{workflow_id:path}/interrupt")
    async def interrupt(workflow_id: str, body: InterruptBody, identity: Caller) -> Any:
        """Stop the turn at its next safe point; it completes with outcome `interrupted`."""
        payload = {"reason": body.reason, "author": identity.name}
        return await intervene(turns, workflow_id, UPDATE_INTERRUPT, payload, identity)

    @app.post("/v1/turns/{workflow_id:path}/cancel", status_code=202)
    async def cancel(workflow_id: str, identity: Caller) -> dict[str, str]:
        """Cancel the turn (its partial report stays readable)."""
        await cancel_as(turns, workflow_id, identity)
        return {"workflow_id": workflow_id}

    @app.get("/v1/tenants/{name}")
    async def tenant(name: TenantPath, identity: Caller) -> TenantSpend:
        """The tenant's spend and caps (operators; a member its own tenant)."""
        check_tenant_reader(identity, name)
        return await turns.tenant(name)

    @app.put("/v1/tenants/{name}")
    async def set_tenant(name: TenantPath, caps: TenantCaps, identity: Operator) -> TenantSpend:
        """Replace the tenant's caps (creating its ledger); operators only."""
        return await turns.set_tenant_caps(name, caps)

    return app


async def _sse(turns: Turns, workflow_id: str, after: int | None) -> AsyncIterator[str]:
    """The events as SSE, with a comment line whenever the turn is quiet for `KEEPALIVE_S`
    (a turn waiting for a person may send nothing for hours; proxies close idle streams)."""
    events = turns.events(workflow_id, after)
    pending = asyncio.ensure_future(_next(events))
    try:
        while True:
            done, _ = await asyncio.wait({pending}, timeout=KEEPALIVE_S)
            if not done:
                yield ": keepalive\n\n"
                continue
            item = pending.result()
            if item is None:
                return
            offset, event = item
            data = json.dumps(event.model_dump(mode="json", exclude_none=True))
            yield f"id: {offset}\nevent: {event.kind}\ndata: {data}\n\n"
            pending = asyncio.ensure_future(_next(events))
    finally:
        pending.cancel()


async def _next(events: AsyncIterator[tuple[int, TurnEvent]]) -> tuple[int, TurnEvent] | None:
    try:
        return await anext(events)
    except StopAsyncIteration:
        return None
