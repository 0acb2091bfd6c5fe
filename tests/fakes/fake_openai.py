"""A local fake of the Chat Completions API (`POST /v1/chat/completions`), so tests drive the
real `openai` SDK over HTTP. Scripted exactly like the Anthropic fake (`fake_anthropic.py`):
a `[script:KEY]` marker in the system message (or the first user message), one step per
assistant message the request carries, a list of replies per step consumed per attempt.

Example:
    async with start_fake_openai() as fake:
        fake.script("hello", [tool_calls(("read_file", {"path": "a.md"})), text("done")])
        provider = OpenAICompatibleProvider(api_key="test", base_url=fake.base_url + "/v1")
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web

from tests.fakes.anthropic_replies import JsonDict, Reply
from tests.fakes.fake_anthropic import FakeAnthropic, find_script_key, serving
from tests.fakes.openai_chat_validation import find_chat_problem
from tests.fakes.openai_replies import chat_error

CHAT_PATH = "/v1/chat/completions"


class FakeOpenAI(FakeAnthropic):
    """The Anthropic fake's scripting, answering Chat Completions requests."""

    messages_path = CHAT_PATH

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post(CHAT_PATH, self._handle_chat)
        return app

    def _request_problem(self, body: JsonDict) -> str | None:
        return find_chat_problem(body)

    async def _handle_chat(self, request: web.Request) -> web.Response:
        return await self._serve(request, chat_script_key)

    def _invalid_request(self, message: str) -> Reply:
        return chat_error(400, "invalid_request_error", None, message)

    def _unauthorized(self, sent: str) -> Reply:
        message = f"Incorrect API key provided: {sent}."
        return chat_error(401, "invalid_request_error", "invalid_api_key", message)


def chat_script_key(body: JsonDict) -> str | None:
    """The KEY from the system message or, failing that, the first user message."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    for role in ("system", "user"):
        first = next((m for m in messages if isinstance(m, dict) and m.get("role") == role), None)
        content = first.get("content") if first else None
        key = find_script_key(content if isinstance(content, str | list) else None)
        if key is not None:
            return key
    return None


@asynccontextmanager
async def start_fake_openai(host: str = "127.0.0.1") -> AsyncIterator[FakeOpenAI]:
    """Serves a fresh `FakeOpenAI` on a free port of `host`; `base_url` has no `/v1`."""
    async with serving(FakeOpenAI(), host) as fake:
        yield fake
