"""Time to the first token over each chat protocol (docs/performance.md): from a user's message
to the first piece of the answer's text a client reads, over the AI SDK's UI message stream
(`POST /v1/agents/{id}/chat`), AG-UI (`POST /v1/agents/{id}/ag-ui`) and A2A (a streamed message),
against the turn's own event stream: `POST /v1/turns` followed on `GET /v1/turns/{id}/events` to
its first `text_delta`.

    .venv/bin/python -m bench.first_token [--turns 20] [--out FILE]

`--out` writes the figures (`FIGURES`) as JSON.

One process drives a fresh dev server (`BenchServer`), `python worker.py` and `turnkeeper serve
--agents` as their own processes, and the suite's fake Anthropic server, which streams every
answer as a few text deltas. Each protocol's message opens a conversation of its own, and a
second message continues it (the conversation exists then: the cost of a message in a running
chat). The sides alternate which goes first each round, so that load meets them alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2 as httpx
from a2a.client import Client as A2aClient

from bench.a2a_serve import a2a_client
from bench.a2a_serve import first_token as a2a_first_token
from bench.ag_ui import first_token as ag_ui_first_token
from bench.ai_sdk_chat import chat_message_timing
from bench.server import BenchServer, free_port
from tests.fakes import fake_anthropic as anthropic
from tests.fakes.fake_anthropic import FakeAnthropic, start_fake_anthropic

ROOT = Path(__file__).resolve().parents[1]
AGENT_ID = "bench-chat"
MODEL = "anthropic:claude-sonnet-4-6"
IDENTITY = "alice"
SIDES = ("events", "chat", "ag_ui", "a2a")
FIGURES = tuple(
    f"{side}_{figure}"
    for side in SIDES
    for figure in ("first_ms_median", "first_ms_p95", "next_ms_median")
) + tuple(f"{side}_over_events" for side in SIDES[1:])


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def _first_data(response: httpx.Response, is_text: Callable[[dict[str, Any]], bool]) -> None:
    """Reads a Server-Sent Events body up to the first `data:` whose JSON `is_text`."""
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data and data != "[DONE]" and is_text(json.loads(data)):
            return
    raise AssertionError("the stream ended without text")


class _Run:
    """The served stack's URL and a client of it; a conversation id per protocol side."""

    def __init__(self, fake: FakeAnthropic, http: httpx.AsyncClient, a2a: A2aClient) -> None:
        self.fake = fake
        self.http = http
        self.a2a_client = a2a
        self.contexts: dict[str, str] = {}
        self.scripts: dict[str, str] = {}

    def message(self, conversation: str | None) -> str:
        """A message whose answer streams at once in a few deltas. The fake model follows the
        first `[script:…]` of the whole conversation: one script per conversation, with an
        answer for each of its messages (None: a turn of its own)."""
        if conversation is not None and conversation in self.scripts:
            return "And once more, please."
        key = f"bench-{uuid.uuid4().hex[:10]}"
        answer = anthropic.text("The answer, streamed in a few parts.")
        self.fake.script(key, [answer, answer])
        if conversation is not None:
            self.scripts[conversation] = key
        return f"Answer me. [script:{key}]"

    async def events(self, conversation: str | None) -> float:
        """ms from `POST /v1/turns` (a streamed turn) to its first `text_delta` on
        `GET /v1/turns/{id}/events`. No conversation: every turn is a first message."""
        body = {
            "agent": {"id": AGENT_ID, "model": MODEL, "stream": True},
            "task": {"id": "bench", "input": self.message(None)},
        }
        began = time.perf_counter()
        started = await self.http.post("/v1/turns", json=body)
        started.raise_for_status()
        workflow_id = started.json()["workflow_id"]
        async with self.http.stream("GET", f"/v1/turns/{workflow_id}/events") as stream:
            await _first_data(stream, lambda event: event.get("kind") == "text_delta")
        return (time.perf_counter() - began) * 1000

    async def chat(self, conversation: str) -> float:
        """ms from the AI SDK transport's POST to its first `text-delta` chunk."""
        timed = await chat_message_timing(
            self.http, AGENT_ID, self.message(conversation), conversation
        )
        return _ms(timed.first_token_s, "chat")

    async def ag_ui(self, conversation: str) -> float:
        """ms from AG-UI's `RunAgentInput` POST to its first `TEXT_MESSAGE_CONTENT`."""
        timed = await ag_ui_first_token(
            self.http, AGENT_ID, conversation, self.message(conversation)
        )
        return _ms(timed.first_token_s, "AG-UI")

    async def a2a(self, conversation: str) -> float:
        """ms from A2A's streamed message (the official Python client) to the first artifact
        update: a piece of the answer. The conversation is the A2A context: the server makes
        one for the first message, which the next names."""
        context = self.contexts.get(conversation)
        timed = await a2a_first_token(self.a2a_client, self.message(conversation), context)
        self.contexts[conversation] = timed.context_id
        return timed.seconds * 1000


def _ms(seconds: float | None, side: str) -> float:
    if seconds is None:
        raise AssertionError(f"{side}: the answer streamed no text")
    return seconds * 1000


Side = Callable[[str], Awaitable[float]]


async def _round(sides: dict[str, Side], reverse: bool) -> dict[str, tuple[float, float]]:
    """Each side's first message of a new conversation and the next one in it: ms each."""
    order = list(sides.items())
    if reverse:
        order.reverse()
    figures = {}
    for name, side in order:
        conversation = f"bench-{name}-{uuid.uuid4().hex[:12]}"
        figures[name] = (await side(conversation), await side(conversation))
    return figures


async def measure(run: _Run, turns: int) -> dict[str, Any]:
    sides: dict[str, Side] = {
        "events": run.events,
        "chat": run.chat,
        "ag_ui": run.ag_ui,
        "a2a": run.a2a,
    }
    for warm in range(2):  # connections, the worker's first activations
        await _round(sides, bool(warm))
    rounds = [await _round(sides, bool(round_ % 2)) for round_ in range(turns)]
    figures: dict[str, Any] = {"turns": turns}
    for name in sides:
        first = [timed[name][0] for timed in rounds]
        later = [timed[name][1] for timed in rounds]
        figures[f"{name}_first_ms_median"] = statistics.median(first)
        figures[f"{name}_first_ms_p95"] = _percentile(first, 0.95)
        figures[f"{name}_next_ms_median"] = statistics.median(later)
    floor = figures["events_first_ms_median"]
    for name in SIDES[1:]:
        figures[f"{name}_over_events"] = figures[f"{name}_next_ms_median"] / floor
    return figures


@asynccontextmanager
async def _stack(server: BenchServer, fake: FakeAnthropic) -> AsyncIterator[tuple[str, str]]:
    """`python worker.py` and `turnkeeper serve --agents` as their own processes: the URL of
    the one and alice's token."""
    queue = f"bench-chat-{uuid.uuid4().hex[:6]}"
    folder = server.folder / "agents"
    folder.mkdir()
    agent = {"id": AGENT_ID, "model": MODEL, "description": "Answers at once."}
    (folder / f"{AGENT_ID}.json").write_text(json.dumps(agent))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(server.folder),
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "bench",
        "AGENT_WORKSPACE": str(server.folder),
        "TURNKEEPER_DATA_DIR": str(server.folder / "data"),
        "AGENT_TASK_QUEUE": queue,
        "TEMPORAL_ADDRESS": server.address,
    }
    tokens = server.folder / "tokens.json"
    console = str(Path(sys.executable).with_name("turnkeeper"))
    added = await asyncio.create_subprocess_exec(
        console, "tokens", "add", IDENTITY, "--file", str(tokens),
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    out, _ = await added.communicate()
    token = out.decode().strip().splitlines()[-1]
    port = free_port()
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable, str(ROOT / "worker.py"), env=env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        ),
        await asyncio.create_subprocess_exec(
            console, "serve", "--tokens", str(tokens), "--agents", str(folder),
            "--port", str(port), env=env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        ),
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        await _until_listening(url)
        yield url, token
    finally:
        for process in processes:
            process.terminate()
            await process.wait()


async def _until_listening(url: str) -> None:
    async with httpx.AsyncClient() as http:
        for _ in range(600):
            try:
                await http.get(f"{url}/v1/whoami")
                return
            except httpx.TransportError:
                await asyncio.sleep(0.1)
    raise TimeoutError(f"turnkeeper serve did not listen at {url}")


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    server = BenchServer()
    try:
        async with server, start_fake_anthropic() as fake, _stack(server, fake) as (url, token):
            headers = {"Authorization": f"Bearer {token}"}
            timeout = httpx.Timeout(30, read=300)
            async with (
                httpx.AsyncClient(base_url=url, headers=headers, timeout=timeout) as http,
                a2a_client(f"{url}/a2a/{AGENT_ID}", token) as a2a,
            ):
                return await measure(_Run(fake, http, a2a), args.turns)
    finally:
        shutil.rmtree(server.folder, ignore_errors=True)


def _table(figures: dict[str, Any]) -> str:
    names = {
        "events": "`POST /v1/turns` → first `text_delta` on `GET /v1/turns/{id}/events`",
        "chat": "AI SDK UI message stream → first `text-delta`",
        "ag_ui": "AG-UI → first `TEXT_MESSAGE_CONTENT`",
        "a2a": "A2A `message/stream` → first text",
    }
    lines = [
        "| side | new conversation, median / p95 | next message, median | ÷ event stream |",
        "|---|---:|---:|---:|",
    ]
    for side, name in names.items():
        ratio = figures.get(f"{side}_over_events")
        lines.append(
            f"| {name} | {figures[f'{side}_first_ms_median']:.1f} / "
            f"{figures[f'{side}_first_ms_p95']:.1f} ms | "
            f"{figures[f'{side}_next_ms_median']:.1f} ms | "
            f"{'floor' if ratio is None else f'{ratio:.2f}'} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20, help="conversations timed per side")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    figures = asyncio.run(main_async(args))
    print(_table(figures))
    if args.out:
        args.out.write_text(json.dumps({name: figures[name] for name in FIGURES}, indent=2))


if __name__ == "__main__":
    main()
