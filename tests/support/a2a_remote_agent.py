"""A remote A2A agent for the tests, served by a2a-sdk's own JSON-RPC routes and request handler
(run as a process by `HttpServerProcess(script=A2A_AGENT)`, never imported by a test). The
executor is the test's; everything between it and the client is the SDK's.

What the agent does is chosen by the first word of the message:

- `research <seconds> <topic>`: works for that long, then completes with an artifact
  `report on <topic>`.
- `ask`: asks which city (`input-required`); the answer completes it with `weather in <city>`.
- `doomed`: fails with "the research database is gone".
- `forever`: works until it is cancelled.
- `hello`: answers at once with a message, no task.
- `login`: asks for authentication (`auth-required`).

`GET /stats` says what it saw (message ids, tasks started, cancels). Beside the agent the app
serves broken ones for the bad-input tests: `/not-a-card.json` (HTML), `/empty/agent-card.json`
(JSON that is no card), `/garbled/agent-card.json`, a card whose endpoint answers every
request with a task that has no id, and `/elsewhere/agent-card.json`, a card that sends its
requests to another origin (`localhost` instead of `127.0.0.1`).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events.event_queue_v2 import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

STATS: dict[str, list[str]] = {"message_ids": [], "tasks": [], "cancelled": []}


class LabAgent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        STATS["message_ids"].append(context.message.message_id)
        words = context.get_user_input().split()
        if context.current_task is None and words and words[0] == "hello":
            await event_queue.enqueue_event(new_text_message("hello yourself"))
            return
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
            STATS["tasks"].append(task.id)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if context.current_task is not None:  # the answer to `ask`
            city = " ".join(words) or "nowhere"
            await updater.add_artifact([Part(text=f"weather in {city}: sunny")])
            await updater.complete()
            return
        await updater.start_work()
        await _run(words, updater)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        STATS["cancelled"].append(context.task_id or "")
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


async def _run(words: list[str], updater: TaskUpdater) -> None:
    verb = words[0] if words else ""
    if verb == "research":
        await asyncio.sleep(float(words[1]))
        await updater.add_artifact([Part(text=f"report on {' '.join(words[2:])}")])
        await updater.complete()
    elif verb == "ask":
        await updater.requires_input(updater.new_agent_message([Part(text="Which city?")]))
    elif verb == "doomed":
        await updater.failed(
            updater.new_agent_message([Part(text="the research database is gone")])
        )
    elif verb == "login":
        await updater.requires_auth(updater.new_agent_message([Part(text="sign in at the portal")]))
    elif verb == "forever":
        await asyncio.sleep(3600)
    else:
        await updater.add_artifact([Part(text=f"echo: {' '.join(words)}")])
        await updater.complete()


def card(port: int, path: str = "") -> AgentCard:
    return AgentCard(
        name="Lab",
        description="Researches topics and reports the weather.",
        version="1.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{port}{path}/",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id="research", name="research", description="reports on a topic", tags=["r"])
        ],
    )


def app(port: int, bearer_file: Path | None) -> Starlette:
    lab = card(port)
    handler = DefaultRequestHandler(
        agent_executor=LabAgent(), task_store=InMemoryTaskStore(), agent_card=lab
    )
    garbled = card(port, "/garbled")
    # The same agent's card, but sending requests to another origin (the same port, by name).
    elsewhere = AgentCard()
    elsewhere.CopyFrom(lab)
    elsewhere.supported_interfaces[0].url = f"http://localhost:{port}/"

    async def stats(_: Request) -> Response:
        return JSONResponse(STATS)

    async def not_a_card(_: Request) -> Response:
        return HTMLResponse("<html><body>Welcome</body></html>")

    async def empty_card(_: Request) -> Response:
        return JSONResponse({"greeting": "hello"})

    async def garbled_rpc(request: Request) -> Response:
        body = await request.json()
        answer = {"task": {"status": {"state": "TASK_STATE_WORKING"}}}
        return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": answer})

    routes = [
        *create_agent_card_routes(lab),
        *create_jsonrpc_routes(handler, rpc_url="/"),
        *create_agent_card_routes(garbled, card_url="/garbled/agent-card.json"),
        *create_agent_card_routes(elsewhere, card_url="/elsewhere/agent-card.json"),
        Route("/garbled/", garbled_rpc, methods=["POST"]),
        Route("/stats", stats),
        Route("/not-a-card.json", not_a_card),
        Route("/empty/agent-card.json", empty_card),
    ]
    application = Starlette(routes=routes)
    if bearer_file is None:
        return application

    async def guarded(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http" and scope["path"] != "/stats":
            headers = dict(scope["headers"])
            wanted = f"Bearer {bearer_file.read_text().strip()}".encode()
            if headers.get(b"authorization") != wanted:
                await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
                return
        await application(scope, receive, send)

    return guarded  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, required=True, help="the port")
    parser.add_argument("--bearer-file", type=Path)
    args = parser.parse_args()
    served = app(args.http, args.bearer_file)
    uvicorn.run(served, host="127.0.0.1", port=args.http, log_level="warning")


if __name__ == "__main__":
    main()
