"""The ASGI app of `turnkeeper serve`: the `/v1/…` endpoints, the approval inbox at `/` and the
OpenAPI document at `/openapi.json`. `create_app` takes the turn operations (`Turns`) and the
token file, so a test can run it in-process over a fake of the first."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ConfigDict, Field

from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.signals import DecisionRecord, TurnStatus
from turnkeeper.contracts.turn import TurnRequest
from turnkeeper.http.auth import FailedSignIns, sign_in
from turnkeeper.http.decisions import DecisionBody, cancel_as, decide, intervene
from turnkeeper.http.inbox import add_inbox
from turnkeeper.http.tokens import Identity, TokenStore
from turnkeeper.http.turns import UPDATE_INTERRUPT, UPDATE_STEER, ApiError, Turns

# Under the idle timeouts of common proxies (nginx 60 s, AWS ALB 60 s).
KEEPALIVE_S = 15.0


class StartTurnBody(TurnRequest):
    """`POST /v1/turns`: a `TurnRequest`, and optionally the workflow id to give the turn."""

    id: str | None = Field(default=None, min_length=1)
    """The workflow id (default: `turn-<agent id>-<random>`)."""


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


def _caller(request: Request) -> Identity:
    """The identity the sign-in middleware found for this request."""
    identity: Identity = request.state.identity
    return identity


# Module level, not inside create_app: FastAPI resolves the annotations by name.
Caller = Annotated[Identity, Depends(_caller)]


def create_app(
    turns: Turns,
    tokens: TokenStore,
    *,
    cors_origins: list[str] | None = None,
    failures: FailedSignIns | None = None,
) -> FastAPI:
    """The app over `turns`, signing callers in with `tokens`; CORS is off unless
    `cors_origins` names the browser origins allowed to call."""
    app = FastAPI(
        title="turnkeeper",
        summary="Start, follow, approve, steer and stop durable agent turns.",
        version="1",
        # Swagger UI and ReDoc load their scripts from a CDN; the server may be offline.
        docs_url=None,
        redoc_url=None,
    )
    failed = failures or FailedSignIns()
    if cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
        )

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, error: ApiError) -> JSONResponse:
        headers = {}
        if error.status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        if error.retry_after_s is not None:
            headers["Retry-After"] = str(error.retry_after_s)
        return JSONResponse({"detail": error.message}, error.status, headers=headers)

    # Sign-in before anything else reads the request: a caller without a token learns
    # nothing, not even whether its body would validate.
    @app.middleware("http")
    async def _sign_in(request: Request, call_next: Any) -> Response:
        if request.url.path.startswith("/v1/") and request.method != "OPTIONS":
            address = request.client.host if request.client else "unknown"
            try:
                identity = sign_in(tokens, failed, request.headers.get("authorization"), address)
            except ApiError as error:
                return await _api_error(request, error)
            request.state.identity = identity
        return await call_next(request)

    add_inbox(app)

    @app.get("/v1/whoami")
    async def whoami(identity: Caller) -> dict[str, str]:
        """The identity the token signs in as."""
        return {"name": identity.name}

    @app.post("/v1/turns", status_code=201)
    async def start(body: StartTurnBody, identity: Caller) -> Started:
        """Start a turn."""
        request = TurnRequest.model_validate(body.model_dump(exclude={"id"}, exclude_unset=True))
        return Started(workflow_id=await turns.start(request, body.id))

    @app.get("/v1/turns/{workflow_id}")
    async def status(workflow_id: str, identity: Caller) -> TurnStatus:
        """The turn's status query."""
        return await turns.status(workflow_id)

    @app.get("/v1/turns/{workflow_id}/events")
    async def events(
        workflow_id: str,
        identity: Caller,
        last_event_id: Annotated[int | None, Header(ge=0)] = None,
    ) -> StreamingResponse:
        """Server-Sent Events of the turn's event stream; `Last-Event-ID` resumes after it."""
        await turns.status(workflow_id)  # 404 before the stream starts, not inside it
        return StreamingResponse(
            _sse(turns, workflow_id, last_event_id),
            media_type="text/event-stream",
            # A proxy must pass each event on at once (nginx buffers otherwise).
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @app.get("/v1/approvals")
    async def approvals(identity: Caller) -> list[Approval]:
        """Every pending approval the caller may decide, across turns."""
        return [
            Approval.model_validate(w, from_attributes=True)
            for w in await turns.waiting_approvals()
            if w.approvers is None or identity.name in w.approvers
        ]

    @app.post("/v1/turns/{workflow_id}/decisions")
    async def decisions(
        workflow_id: str, body: DecisionBody, identity: Caller
    ) -> list[DecisionRecord]:
        """Approve or reject a waiting call as the token's identity."""
        return await decide(turns, workflow_id, body, identity)

    @app.post("/v1/turns/{workflow_id}/steer")
    async def steer(workflow_id: str, body: SteerBody, identity: Caller) -> Any:
        """Add a message to the conversation before the turn's next model call."""
        payload = {"message": body.message, "author": identity.name}
        return await intervene(turns, workflow_id, UPDATE_STEER, payload, identity)

    @app.post("/v1/turns/{workflow_id}/interrupt")
    async def interrupt(workflow_id: str, body: InterruptBody, identity: Caller) -> Any:
        """Stop the turn at its next safe point; it completes with outcome `interrupted`."""
        payload = {"reason": body.reason, "author": identity.name}
        return await intervene(turns, workflow_id, UPDATE_INTERRUPT, payload, identity)

    @app.post("/v1/turns/{workflow_id}/cancel", status_code=202)
    async def cancel(workflow_id: str, identity: Caller) -> dict[str, str]:
        """Cancel the turn (its partial report stays readable)."""
        await cancel_as(turns, workflow_id, identity)
        return {"workflow_id": workflow_id}

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
