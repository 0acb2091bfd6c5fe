"""Attachments by URL (docs/attachments.md): the worker fetches a `url` source from a host the
operator lists, on the real dev server, from a real HTTP server here. What a user sees: the
model gets the exact bytes and history a reference; a host not listed, a missing file, a
redirect, or a body over the limit (declared or sent) fails the turn with InvalidTurnRequest
naming the attachment, before any model call; a host that is busy for a moment is asked again."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from temporalio.client import Client
from turnkeeper.contracts.attachments import AttachmentLimits, ImageBlock, StoredSource

from tests.conftest import (
    TurnRunner,
    failure_of_turn,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.attachment_checks import attachment_bytes
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.attachment_files import png_of
from turnkeeper.payloads.content_store import ContentStore

CHART = png_of(200 * 1024)
LIMIT = 512 * 1024
CHUNK = 64 * 1024


@dataclasses.dataclass
class FileHost:
    """A web server with one path per way a host answers, and what it sent."""

    base_url: str
    sent: dict[str, int] = dataclasses.field(default_factory=dict)
    asked: dict[str, int] = dataclasses.field(default_factory=dict)

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path}"


@pytest.fixture
async def file_host() -> AsyncIterator[FileHost]:
    host = FileHost("")

    def counted(request: web.Request) -> None:
        host.asked[request.path] = host.asked.get(request.path, 0) + 1

    async def chart(request: web.Request) -> web.Response:
        counted(request)
        return web.Response(body=CHART, content_type="image/png")

    async def busy_once(request: web.Request) -> web.Response:
        counted(request)
        if host.asked[request.path] == 1:
            return web.Response(status=503)
        return web.Response(body=CHART, content_type="image/png")

    async def always_busy(request: web.Request) -> web.Response:
        counted(request)
        return web.Response(status=503)

    async def gone(request: web.Request) -> web.Response:
        counted(request)
        return web.Response(status=404)

    async def moved(request: web.Request) -> web.Response:
        counted(request)
        raise web.HTTPFound("/chart.png")

    async def endless(request: web.Request) -> web.StreamResponse:
        """A body that never ends, in chunks: only a reader that stops can finish."""
        counted(request)
        answer = web.StreamResponse(headers={"Content-Type": "image/png"})
        await answer.prepare(request)
        host.sent[request.path] = 0
        try:
            await answer.write(CHART[:CHUNK])
            while True:
                host.sent[request.path] += CHUNK
                await answer.write(bytes(CHUNK))
                await asyncio.sleep(0)
        except (ConnectionError, asyncio.CancelledError):
            return answer

    async def declared_huge(request: web.Request) -> web.StreamResponse:
        """Says it is 10 GB, sends 1 KiB and then nothing: only a reader that trusts the header
        stops at once."""
        counted(request)
        answer = web.StreamResponse(headers={"Content-Type": "image/png"})
        answer.content_length = 10 * 1024**3
        await answer.prepare(request)
        await answer.write(CHART[:1024])
        await asyncio.sleep(600)
        return answer

    app = web.Application()
    app.router.add_get("/chart.png", chart)
    app.router.add_get("/busy.png", busy_once)
    app.router.add_get("/gone.png", gone)
    app.router.add_get("/down.png", always_busy)
    app.router.add_get("/moved.png", moved)
    app.router.add_get("/endless.png", endless)
    app.router.add_get("/huge.png", declared_huge)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    host.base_url = f"http://127.0.0.1:{port}"
    yield host
    await runner.cleanup()


@pytest.fixture
async def fetching(
    client: Client, fake_anthropic: FakeAnthropic, payload_store: ContentStore, tmp_path: Path
) -> AsyncIterator[TurnRunner]:
    """A worker that may fetch from 127.0.0.1 (and nowhere else), with a 512 KiB limit."""
    settings = dataclasses.replace(
        make_settings(tmp_path, f"tq-{uuid.uuid4()}"),
        attachment_url_hosts=frozenset({"127.0.0.1"}),
        attachment_limits=AttachmentLimits(max_bytes=LIMIT),
    )
    async with running_worker(client, settings, fake_anthropic, store=payload_store):
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic)


def _with_url(key: str, url: str) -> dict[str, object]:
    block = {"type": "image", "source": {"type": "url", "url": url}}
    return scripted_request(key, task={"input": [{"type": "text", "text": "What is it?"}, block]})


@pytest.mark.parametrize("path", ["chart.png", "busy.png"], ids=["at-once", "after-a-503"])
async def test_a_url_from_a_listed_host_reaches_the_model_as_bytes_and_history_as_a_reference(
    fetching: TurnRunner, file_host: FileHost, payload_store: ContentStore, path: str
) -> None:
    key = new_key()
    fetching.fake.script(key, [fake.text("A chart.")])

    handle = await fetching.start(_with_url(key, file_host.url(path)))
    report = await handle.result()

    assert report.output == "A chart."
    assert [attachment_bytes(r.body) for r in fetching.fake.requests_for(key)] == [[CHART]]
    [image] = [b for b in report.messages[0].content if isinstance(b, ImageBlock)]
    assert isinstance(image.source, StoredSource) and image.source.size == len(CHART)
    assert image.name == path
    assert await payload_store.get(image.source.ref) == CHART
    assert file_host.asked[f"/{path}"] == (1 if path == "chart.png" else 2)


# A host that may answer later is asked as often as the activity's retry policy allows (5).
ATTEMPTS = 5


@pytest.mark.parametrize(
    ("url", "needles", "asked"),
    [
        ("http://localhost:9/x.png", ["TURNKEEPER_ATTACHMENT_URL_HOSTS", "'localhost'"], 0),
        ("gone.png", ["answered 404"], 1),
        ("moved.png", ["answered 302", "redirect", "send the final URL"], 1),
        ("endless.png", ["sent more than the 524288-byte limit", "stopped"], 1),
        ("huge.png", ["says it is 10737418240 bytes", "524288-byte limit", "nothing more"], 1),
        ("down.png", ["answered 503, on each of 5 attempts", "again later"], ATTEMPTS),
        ("http://127.0.0.1:9/x.png", ["could not be reached (ConnectError", "5 attempts"], 0),
    ],
    ids=[
        "host-not-listed",
        "missing",
        "redirect",
        "endless-body",
        "declared-too-large",
        "down-for-good",
        "unreachable",
    ],
)
async def test_a_url_that_brings_no_fitting_attachment_fails_the_turn_before_any_model_call(
    fetching: TurnRunner, file_host: FileHost, url: str, needles: list[str], asked: int
) -> None:
    key = new_key()
    fetching.fake.script(key, [fake.text("never")])
    full_url = url if url.startswith("http") else file_host.url(url)

    handle = await fetching.start(_with_url(key, full_url))
    error, report = await failure_of_turn(handle)

    assert error.type == "InvalidTurnRequest"
    assert all(needle in error.message for needle in needles), error.message
    assert report.llm_calls == 0
    assert fetching.fake.requests_for(key) == []
    # A refusal is not retried: the host was asked once, or as often as it could answer later.
    assert sum(file_host.asked.values()) == asked
    # The endless body stopped soon after the limit: what loopback's socket buffers held (a few
    # MiB at most, tuned by the kernel) beyond what was read.
    assert file_host.sent.get("/endless.png", 0) < LIMIT + 32 * 1024 * 1024
