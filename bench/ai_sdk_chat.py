"""One message over the AI SDK's chat endpoint (docs/ai-sdk.md), timed as its client sees it:
from sending the user message to the first streamed text (`text-delta`), and to the stream's
end. For a bench that sets it against the turn's own event stream (`GET
/v1/turns/{id}/events`, first `text_delta`): the same agent, the same model, each its own turn.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass

import httpx2 as httpx


@dataclass(frozen=True)
class ChatTiming:
    """One message's stream as the client read it."""

    turn_id: str
    """The turn the message started (the stream's `start.messageId`)."""
    first_token_s: float | None
    """Seconds from the request to the first `text-delta` (None: no text streamed)."""
    total_s: float
    """Seconds from the request to `[DONE]`."""


async def chat_message_timing(
    http: httpx.AsyncClient, agent_id: str, text: str, chat_id: str | None = None
) -> ChatTiming:
    """Sends `text` as a new chat's message (or `chat_id`'s next) to `agent_id` through `http`
    (its base URL the server's, its headers the bearer token) and times the answer's stream."""
    message = {"id": uuid.uuid4().hex, "role": "user", "parts": [{"type": "text", "text": text}]}
    body = {
        "id": chat_id or f"bench-{uuid.uuid4().hex}",
        "messages": [message],
        "trigger": "submit-message",
    }
    turn_id, first = "", None
    started = time.perf_counter()
    async with http.stream("POST", f"/v1/agents/{agent_id}/chat", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line.removeprefix("data: "))
            if chunk["type"] == "start":
                turn_id = chunk.get("messageId", "")
            elif chunk["type"] == "text-delta" and first is None:
                first = time.perf_counter() - started
    return ChatTiming(turn_id, first, time.perf_counter() - started)
