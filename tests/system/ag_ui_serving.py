"""What the AG-UI tests share (docs/ag-ui.md): a run posted to `POST /v1/agents/{id}/ag-ui` of a
real `turnkeeper serve --agents DIR` and its stream read as AG-UI's events, and the npm client
(`tests/interop/agui_client.mjs`) as a process of its own."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx2 as httpx

from tests.support.interop import INTEROP, node
from tests.system.mcp_serving import Served, http_client
from tests.system.test_mcp_interop import run_node

CLIENT_SCRIPT = INTEROP / "agui_client.mjs"


def ag_ui_path(agent_id: str) -> str:
    return f"/v1/agents/{agent_id}/ag-ui"


def run_body(thread_id: str, *, text: str | None = None, **fields: Any) -> dict[str, Any]:
    """A `RunAgentInput` on `thread_id`: with `text`, a new user message."""
    messages = [{"id": uuid.uuid4().hex, "role": "user", "content": text}] if text else []
    return {"threadId": thread_id, "runId": uuid.uuid4().hex, "messages": messages, **fields}


async def post_run(
    served: Served, name: str, agent_id: str, body: dict[str, Any]
) -> tuple[httpx.Response, list[dict[str, Any]]]:
    """Posts `body` as `name`; the response and, when it streams, its AG-UI events."""
    async with (
        http_client(served.tokens[name]) as http,
        http.stream("POST", served.url + ag_ui_path(agent_id), json=body) as response,
    ):
        await response.aread()
    events = [
        json.loads(line.removeprefix("data: "))
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]
    return response, events


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


async def agui_client(
    served: Served, name: str, agent_id: str, thread: str, message: str, *args: str
) -> dict[str, Any]:
    """`node tests/interop/agui_client.mjs …` as `name`: what it printed."""
    return await run_node(
        node(),
        CLIENT_SCRIPT,
        "--url",
        served.url,
        "--agent",
        agent_id,
        "--token",
        served.tokens[name],
        "--thread",
        thread,
        "--message",
        message,
        *args,
    )
