"""Images and documents in a turn (docs/attachments.md), on the real dev server with the fake
model APIs, which check each API's block shape and keep the bytes they received.

What a user sees: the provider gets the exact bytes, history gets a reference (from the library
client, or from the worker on first sight of a `temporal` CLI request with base64), a tool's image
reaches the model the same way, and what does not fit is refused before any model call."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError
from turnkeeper.contracts.attachments import ImageBlock, StoredSource
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.turn import AgentReport, TurnRequest

import turnkeeper
from tests.conftest import (
    TurnRunner,
    failure_of_turn,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes import openai_replies as chat
from tests.fakes.attachment_checks import attachment_bytes
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fake_openai import FakeOpenAI
from tests.support.attachment_files import pdf_of, png_of
from turnkeeper.http.errors import ApiError
from turnkeeper.http.turns import TurnService
from turnkeeper.payloads.content_store import ContentStore
from turnkeeper.payloads.encrypted_store import EncryptedStore
from turnkeeper.worker.wiring import tool_registry

PNG_BYTES = 300 * 1024


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@turnkeeper.tool
def snapshot() -> list[str | turnkeeper.Image]:
    """Take a screenshot of the dashboard."""
    return ["the dashboard:", turnkeeper.Image(SCREEN, "image/png", name="dashboard.png")]


SCREEN = png_of(40 * 1024, width=1024, height=768)


@pytest.fixture
async def attaching(
    client: Client,
    fake_anthropic: FakeAnthropic,
    fake_openai: FakeOpenAI,
    payload_store: ContentStore,
    tmp_path: Path,
) -> AsyncIterator[TurnRunner]:
    """A worker on the client's own content store, as a deployment shares one."""
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    tools = tool_registry(settings, [snapshot])
    async with running_worker(
        client, settings, fake_anthropic, tools, payload_store, openai_fake=fake_openai
    ):
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic, fake_openai)


def _files(tmp_path: Path) -> tuple[Path, Path]:
    png, pdf = tmp_path / "chart.png", tmp_path / "invoice.pdf"
    png.write_bytes(png_of(PNG_BYTES))
    pdf.write_bytes(pdf_of())
    return png, pdf


async def _history_json(handle: WorkflowHandle[Any, Any]) -> str:
    return (await handle.fetch_history()).to_json()


@pytest.mark.parametrize("model", ["anthropic:claude-sonnet-4-6", "openai:gpt-4.1"])
async def test_a_png_and_a_pdf_reach_the_model_as_bytes_and_history_as_references(
    attaching: TurnRunner, tmp_path: Path, model: str
) -> None:
    png, pdf = _files(tmp_path)
    key = new_key()
    on_openai = model.startswith("openai:")
    api = attaching.openai if on_openai else attaching.fake
    assert api is not None
    answer = (chat if on_openai else fake).text("A rising chart and an invoice for 120 EUR.")
    api.script(key, [answer])
    request = scripted_request(key, agent={"model": model})

    handle = await turnkeeper.start_turn(
        attaching.client, request, attachments=[png, pdf], task_queue=attaching.task_queue
    )
    report = await handle.result()

    [sent] = api.requests_for(key)
    assert attachment_bytes(sent.body) == [png.read_bytes(), pdf.read_bytes()]
    image, document = report.messages[0].content[1:]
    assert isinstance(image, ImageBlock) and isinstance(image.source, StoredSource)
    assert (image.name, image.source.media_type, image.source.size) == (
        "chart.png",
        "image/png",
        PNG_BYTES,
    )
    assert document.type == "document" and document.name == "invoice.pdf"
    history = await _history_json(handle.workflow)
    assert len(history) < 60_000
    assert base64.b64encode(png.read_bytes()[4096:4196]).decode()[:40] not in history
    # Anthropic: 800 x 600 / 750 = 640 tokens; OpenAI: 85 + 170 x 4 tiles = 765; and 1,500
    # for the PDF's page: billed as the provider reports, not as base64's characters.
    image_tokens = 765 if on_openai else 640
    assert image_tokens + 1500 <= report.usage.input_tokens < image_tokens + 1500 + 300


async def test_base64_blocks_from_the_temporal_cli_are_stored_by_the_worker_on_first_sight(
    attaching: TurnRunner, payload_store: ContentStore
) -> None:
    data = png_of(PNG_BYTES)
    encoded = base64.b64encode(data).decode()
    key = new_key()
    attaching.fake.script(key, [fake.tool_calls(("list_files", {})), fake.text("done")])
    block = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": encoded},
    }
    request = scripted_request(
        key, task={"input": [{"type": "text", "text": "What is shown?"}, block]}
    )

    handle = await attaching.start(request)
    report = await handle.result()

    sent = attaching.fake.requests_for(key)
    assert [attachment_bytes(r.body) for r in sent] == [[data], [data]]
    [image] = [b for b in report.messages[0].content if isinstance(b, ImageBlock)]
    assert isinstance(image.source, StoredSource) and image.source.size == len(data)
    assert await payload_store.get(image.source.ref) == data
    if isinstance(payload_store, EncryptedStore):  # the suite's encrypted run: ciphertext at rest
        at_rest = await payload_store.inner.get(image.source.ref)
        assert data[:64] not in at_rest and at_rest.startswith(b"TKE1")
    # The start event holds the request as it was sent (encrypted, with keys); nothing after it.
    history = await _history_json(handle)
    assert history.count(encoded[1000:1100]) <= 1
    assert len(history) - len(encoded) < 60_000


async def test_an_image_a_tool_returns_and_a_png_read_by_read_file_reach_the_model(
    attaching: TurnRunner,
) -> None:
    photo = png_of(20 * 1024)
    (attaching.workspace / "photo.png").write_bytes(photo)
    key = new_key()
    attaching.fake.script(
        key,
        [
            fake.tool_calls(("snapshot", {}), ("read_file", {"path": "photo.png"})),
            fake.text("Both seen."),
        ],
    )
    request = scripted_request(key, agent={"tools": ["snapshot", "read_file"]})

    report = await (await attaching.start(request)).result()

    second = attaching.fake.requests_for(key)[1]
    assert attachment_bytes(second.body) == [SCREEN, photo]
    results = [b for b in report.messages[2].content if isinstance(b, ToolResultBlock)]
    assert [r.is_error for r in results] == [False, False]
    assert [r.text() for r in results] == ["the dashboard:", ""]
    stored = [p for r in results for p in r.content if isinstance(p, ImageBlock)]
    assert [p.name for p in stored] == ["dashboard.png", "photo.png"]
    assert all(isinstance(p.source, StoredSource) for p in stored)


async def _no_turn(client: Client, workflow_id: str) -> None:
    with pytest.raises(RPCError):
        await client.get_workflow_handle(workflow_id).describe()


@pytest.mark.parametrize(
    ("name", "content", "limit", "needles"),
    [
        ("big.png", png_of(64 * 1024), "50000", ["'big.png'", "65536 bytes", "50000-byte"]),
        ("notes.png", b"just text, not an image", None, ["'notes.png'", "not image/png"]),
        ("scan.bmp", b"BM" + bytes(64), None, ["'scan.bmp'", "image/bmp", "do not take"]),
    ],
    ids=["oversized", "not-what-it-says", "a-type-no-model-takes"],
)
async def test_an_oversized_or_wrong_typed_file_is_refused_before_anything_starts(
    attaching: TurnRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    content: bytes,
    limit: str | None,
    needles: list[str],
) -> None:
    if limit is not None:
        monkeypatch.setenv("TURNKEEPER_ATTACHMENT_MAX_BYTES", limit)
    path = tmp_path / name
    path.write_bytes(content)
    key = new_key()
    attaching.fake.script(key, [fake.text("never")])
    workflow_id = f"turn-refused-{key}"

    with pytest.raises(turnkeeper.InvalidTurnRequest) as refused:
        await turnkeeper.start_turn(
            attaching.client,
            scripted_request(key),
            attachments=[path],
            id=workflow_id,
            task_queue=attaching.task_queue,
        )

    assert all(needle in str(refused.value) for needle in needles), refused.value
    await _no_turn(attaching.client, workflow_id)
    assert attaching.fake.requests_for(key) == []


async def test_a_base64_block_over_the_workers_limit_fails_the_turn_before_any_model_call(
    attaching: TurnRunner,
) -> None:
    data = png_of(4 * 1024 * 1024)  # over the default 3.75 MiB a provider takes
    block = {
        "type": "image",
        "name": "huge.png",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(data).decode(),
        },
    }
    key = new_key()
    attaching.fake.script(key, [fake.text("never")])

    handle = await attaching.start(scripted_request(key, task={"input": [block]}))
    error, report = await failure_of_turn(handle)

    assert error.type == "InvalidTurnRequest"
    assert "'huge.png'" in error.message and "3932160-byte" in error.message
    assert report.llm_calls == 0
    assert attaching.fake.requests_for(key) == []


async def test_twenty_iterations_with_an_attachment_grow_history_like_the_same_turn_without(
    attaching: TurnRunner, tmp_path: Path
) -> None:
    png, _ = _files(tmp_path)
    sizes = {}
    for attachments in ([], [png]):
        key = new_key()
        steps = [fake.tool_calls(("list_files", {})) for _ in range(19)]
        attaching.fake.script(key, [*steps, fake.text("done")], prompt_cache=True)
        request = scripted_request(key, agent={"max_iterations": 20})
        handle = await turnkeeper.start_turn(
            attaching.client, request, attachments=attachments, task_queue=attaching.task_queue
        )
        report = await handle.result()
        assert report.iterations == 20
        history = await handle.workflow.fetch_history()
        sizes[bool(attachments)] = sum(event.ByteSize() for event in history.events)
        if attachments:
            billed = attaching.fake.billed_for(key)
            sent = attaching.fake.requests_for(key)
            # The same bytes in the same place at every call: the prompt cache keeps hitting.
            assert all(attachment_bytes(r.body) == [png.read_bytes()] for r in sent)
            assert report.usage.cache_read_tokens > 0, billed
    per_iteration = {with_it: size / 20 for with_it, size in sizes.items()}
    assert per_iteration[True] / per_iteration[False] <= 1.05, sizes


async def test_the_http_apis_base64_blocks_are_stored_before_the_turn_starts(
    attaching: TurnRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_TASK_QUEUE", attaching.task_queue)
    service = TurnService(attaching.client)
    data = png_of(200 * 1024)
    key = new_key()
    attaching.fake.script(key, [fake.text("A chart.")])

    def request(image: bytes) -> TurnRequest:
        source = {"type": "base64", "media_type": "image/png", "data": b64(image)}
        blocks = [{"type": "text", "text": "What is it?"}, {"type": "image", "source": source}]
        return TurnRequest.model_validate(scripted_request(key, task={"input": blocks}))

    workflow_id = await service.start(request(data), f"turn-http-{key}", "alice")
    handle = attaching.client.get_workflow_handle(workflow_id, result_type=AgentReport)
    report = await handle.result()
    monkeypatch.setenv("TURNKEEPER_ATTACHMENT_MAX_BYTES", "1000")
    with pytest.raises(ApiError) as refused:
        await service.start(request(data), f"turn-http-refused-{key}", "alice")

    [sent] = attaching.fake.requests_for(key)
    assert attachment_bytes(sent.body) == [data]
    started = await service.request(workflow_id)
    [image] = started.task.attachments()
    assert isinstance(image.source, StoredSource) and image.source.size == len(data)
    assert isinstance(report.messages[0].content[1], ImageBlock)
    assert refused.value.status == 422 and "1000-byte limit" in refused.value.message
    await _no_turn(attaching.client, f"turn-http-refused-{key}")
