"""A served agent's time to first token over A2A (docs/a2a.md), for a bench that compares it
with the turn's own event stream: `a2a_client` opens the official Python client (`a2a-sdk`) of
`http://HOST:PORT/a2a/{agent_id}` once (its card read outside the timing), and
`first_token` sends one streamed message and times the first piece of the answer.

    async with a2a_client(agent_url, token) as client:
        timed = await first_token(client, "Say hello.")
        # timed.seconds: send → first artifact update; timed.task_id: the turn's workflow id,
        # whose own event stream (`GET /v1/turns/{id}/events`) is the reference.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import new_text_part
from a2a.types import Message, Role, SendMessageRequest


@dataclass(frozen=True)
class FirstToken:
    """One streamed message, timed."""

    seconds: float
    """From sending the message to the first piece of the answer (an artifact update)."""
    total_seconds: float
    """From sending the message to the stream's end."""
    task_id: str
    """The task: the turn's workflow id."""
    context_id: str


@asynccontextmanager
async def a2a_client(agent_url: str, token: str) -> AsyncIterator[Client]:
    """The SDK's streaming client of the agent at `agent_url`, signed in with `token`."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=None)) as http:
        client = await create_client(agent_url, client_config=ClientConfig(httpx_client=http))
        try:
            yield client
        finally:
            await client.close()


async def first_token(client: Client, text: str, context_id: str | None = None) -> FirstToken:
    """Sends `text` as `message/stream` (a new context unless `context_id` names one) and
    reads the stream to its end.

    Raises:
        RuntimeError: The stream ended without a piece of the answer.
    """
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[new_text_part(text)],
        context_id=context_id,
    )
    sent = time.perf_counter()
    first: float | None = None
    task_id = found_context = ""
    async for event in client.send_message(SendMessageRequest(message=message)):
        if event.HasField("task"):
            task_id, found_context = event.task.id, event.task.context_id
        elif event.HasField("artifact_update") and first is None:
            first = time.perf_counter() - sent
    if first is None:
        raise RuntimeError(f"task {task_id!r} streamed no answer")
    return FirstToken(first, time.perf_counter() - sent, task_id, found_context)
