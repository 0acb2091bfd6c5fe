"""What the tests of agents served over A2A share (docs/a2a.md): the official Python client
(`a2a-sdk`) of a served agent, signed in with a bearer token, raw JSON-RPC for what a client
would never send, and the turns and decisions a test checks afterwards through the HTTP API."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx  # the SDK's client takes an httpx client
import httpx2
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import Message, Part, Role, SendMessageRequest, StreamResponse, Task, TaskState
from google.protobuf.json_format import MessageToDict

from tests.system.mcp_serving import Served

WORKING = TaskState.TASK_STATE_WORKING
COMPLETED = TaskState.TASK_STATE_COMPLETED
INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED
CANCELED = TaskState.TASK_STATE_CANCELED


def agent_url(served: Served, agent_id: str) -> str:
    return f"{served.url}/a2a/{agent_id}"


@asynccontextmanager
async def a2a_client(
    served: Served, name: str, agent_id: str, *, streaming: bool = True
) -> AsyncIterator[Client]:
    """The SDK's client of `agent_id`, from its card, as identity `name`."""
    headers = {"Authorization": f"Bearer {served.tokens[name]}"}
    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=300)) as http:
        config = ClientConfig(httpx_client=http, streaming=streaming)
        client = await create_client(agent_url(served, agent_id), client_config=config)
        try:
            yield client
        finally:
            await client.close()


def ask(text: str, context_id: str | None = None) -> SendMessageRequest:
    """A user's message that starts the context's next turn."""
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[new_text_part(text)],
        context_id=context_id,
    )
    return SendMessageRequest(message=message)


def answer(
    task: Task, decision: dict[str, Any], parts: list[Part] | None = None
) -> SendMessageRequest:
    """The caller's answer to a task in `input-required`: its decision as a data part."""
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        task_id=task.id,
        context_id=task.context_id,
        parts=parts if parts is not None else [new_data_part(decision)],
    )
    return SendMessageRequest(message=message)


async def events(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


def last_task(streamed: list[StreamResponse]) -> Task:
    """The task a stream leaves: its first `task`, with the last status it was sent."""
    [first, *rest] = streamed
    task = Task()
    task.CopyFrom(first.task)
    for event in rest:
        if event.HasField("status_update"):
            task.status.CopyFrom(event.status_update.status)
        elif event.HasField("task"):
            task.CopyFrom(event.task)
    return task


def streamed_text(streamed: list[StreamResponse]) -> str:
    """The answer as a client builds it from the artifact updates (append or replace)."""
    text = ""
    for event in streamed:
        if event.HasField("artifact_update"):
            update = event.artifact_update
            chunk = "".join(part.text for part in update.artifact.parts)
            text = text + chunk if update.append else chunk
    return text


def waiting_call(task: Task) -> dict[str, Any]:
    """The call an `input-required` task waits on, from its status message's data part."""
    data = [MessageToDict(part.data) for part in task.status.message.parts if part.HasField("data")]
    [call] = data
    return call


async def rpc(
    served: Served, name: str | None, agent_id: str, method: str, params: Any
) -> httpx2.Response:
    """One JSON-RPC request as sent, protocol 1.0 (`A2A-Version: 1.0`)."""
    headers = {"A2A-Version": "1.0"}
    if name is not None:
        headers["Authorization"] = f"Bearer {served.tokens[name]}"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with httpx2.AsyncClient(timeout=60) as http:
        return await http.post(agent_url(served, agent_id), json=body, headers=headers)


async def api(served: Served, name: str, method: str, path: str, **kwargs: Any) -> httpx2.Response:
    """A request to the HTTP API as `name`."""
    headers = {"Authorization": f"Bearer {served.tokens[name]}"}
    async with httpx2.AsyncClient(base_url=served.url, headers=headers, timeout=60) as http:
        return await http.request(method, path, **kwargs)
