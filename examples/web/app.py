"""A web front for the support agent: start a turn over HTTP, follow it as Server-Sent Events.

    uvicorn examples.web.app:app        # from the repository root, next to a running worker

    curl -s localhost:8000/turns -d '{"input": "Where is order 1043?"}'
    curl -N localhost:8000/turns/<turn_id>/events

`POST /turns` with `{"input": "..."}` starts a turn and returns `{"turn_id": "..."}`;
`GET /turns/{turn_id}/events` streams its events (`data: <TurnEvent JSON>` each) from the first
until the turn ends, so a page can attach late and still see the whole story. The agent here
only looks orders up: a turn that waits for a human's approval belongs in `support/client.py`.
Settings as for the worker: TEMPORAL_ADDRESS, AGENT_TASK_QUEUE (default `agent-turns`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

import turnkeeper
from examples.support.tools import AGENT

LOOKUP_AGENT = {**AGENT, "id": "support-lookup-agent", "tools": ["lookup_order"]}


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    app.state.client = await turnkeeper.connect()
    yield


async def start_turn(request: Request) -> JSONResponse:
    body = await request.json()
    text = body.get("input") if isinstance(body, dict) else None
    if not isinstance(text, str) or not text.strip():
        return JSONResponse({"error": 'send {"input": "<what the customer asks>"}'}, 400)
    handle = await turnkeeper.start_turn(
        request.app.state.client,
        agent=LOOKUP_AGENT,
        task={"id": f"web-{uuid.uuid4().hex[:8]}", "input": text},
        task_queue=os.environ.get("AGENT_TASK_QUEUE", "agent-turns"),
    )
    return JSONResponse({"turn_id": handle.id}, 201)


async def turn_events(request: Request) -> StreamingResponse:
    handle = turnkeeper.turn(request.app.state.client, request.path_params["turn_id"])

    async def stream() -> AsyncIterator[str]:
        async for event in handle.events():
            yield f"data: {event.model_dump_json(exclude_none=True)}\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream")


app = Starlette(
    routes=[
        Route("/turns", start_turn, methods=["POST"]),
        Route("/turns/{turn_id}/events", turn_events),
    ],
    lifespan=lifespan,
)
