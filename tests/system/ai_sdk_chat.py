"""What the tests of the AI SDK chat endpoint share (docs/ai-sdk.md): the `ai` package's chat
(`tests/interop/chat_client.mjs`) run as a Node process against `turnkeeper serve --agents`,
and the endpoint read by hand where a test needs the wire itself."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx2 as httpx

from tests.support.interop import INTEROP, node, node_output
from tests.system.mcp_serving import Served

CHAT_SCRIPT = INTEROP / "chat_client.mjs"
# A Node process's bound: every step's turn ends, or waits for an answer, well within it.
NODE_TIMEOUT_S = 180


async def chat_client(
    served: Served,
    name: str,
    agent_id: str,
    chat_id: str,
    steps: list[dict[str, Any]],
    messages: list[dict[str, Any]] | None = None,
    url: str | None = None,
) -> list[dict[str, Any]]:
    """`node tests/interop/chat_client.mjs` as `name`; what it printed after each step."""
    command = [
        node(), str(CHAT_SCRIPT), "--url", url or served.url, "--agent", agent_id,
        "--chat", chat_id, "--steps", json.dumps(steps), "--messages", json.dumps(messages or []),
    ]  # fmt: skip
    # The token in the environment, not on the command line, which other users can read.
    out = await node_output(
        *command, timeout_s=NODE_TIMEOUT_S, env={"TURNKEEPER_TOKEN": served.tokens[name]}
    )
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def user_message(text: str) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex, "role": "user", "parts": [{"type": "text", "text": text}]}


def chat_body(chat_id: str, *messages: dict[str, Any]) -> dict[str, Any]:
    return {"id": chat_id, "messages": list(messages), "trigger": "submit-message"}


async def post_chat(
    served: Served, name: str, agent_id: str, body: Any
) -> tuple[int, dict[str, str], list[Any]]:
    """`POST /v1/agents/{agent_id}/chat` read by hand: the status, headers, and the JSON of each
    `data:` line (the body's JSON for a refusal)."""
    headers = {"Authorization": f"Bearer {served.tokens[name]}"}
    async with (
        httpx.AsyncClient(base_url=served.url, headers=headers, timeout=120) as http,
        http.stream("POST", f"/v1/agents/{agent_id}/chat", json=body) as response,
    ):
        if response.status_code != 200:
            await response.aread()
            return response.status_code, dict(response.headers), [response.json()]
        lines = [line async for line in response.aiter_lines()]
    data = [line.removeprefix("data: ") for line in lines if line.startswith("data: ")]
    return 200, dict(response.headers), [d if d == "[DONE]" else json.loads(d) for d in data]


def text_of(message: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in message["parts"] if part["type"] == "text")


def folder_of(tmp_path: Path) -> Path:
    return tmp_path / "agents"
