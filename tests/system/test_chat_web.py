"""The chat page of `examples/chat-web/` (`@ai-sdk/react`'s `useChat`, bundled) in headless
Chromium, against `turnkeeper serve --agents DIR --cors-origin …` as its own process beside
`python worker.py`, the page's files served by `python -m http.server` as its README says: a
message sent, the streamed text and the tool call shown, the call approved from its button,
the answer and its cost shown; and a reload while the model is still answering, after which the
page resumes the turn's stream (`GET /v1/agents/{agent_id}/chat/{chat_id}/stream`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2 as httpx
import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.support.browser import Page, find_chromium, headless_chromium
from tests.support.chat_web import serving_page
from tests.support.waiting import until
from tests.system.conftest import SystemStack
from tests.system.driving import connect_like
from tests.system.mcp_serving import Served, serving_agents, write_agent
from turnkeeper import AgentReport

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (Debian: chromium)")

# Long enough to reload the page and see the resumed stream pick the turn up again.
ANSWER_DELAY_S = 8.0


def writer(stack: SystemStack, folder: Path, key: str, answer: fake.Reply) -> None:
    """An agent `writer` whose model says a sentence and writes `out.md` (a call that waits for
    approval), then gives `answer` (a conversation's model calls stream their text)."""
    write = fake.tool_calls(
        ("write_file", {"path": "out.md", "content": "hello"}), text="I will save the note."
    )
    stack.fake.script(key, [write, answer])
    write_agent(
        folder,
        key,
        "writer",
        tools=["write_file"],
        constraints={"require_approval": ["write_file"]},
    )


async def answered(page: Page, request: str) -> list[str]:
    """The statuses of the responses to requests that start with `request` (`METHOD URL`)."""
    return [r.split(" ", 1)[0] for r in page.responses if r.split(" ", 1)[1].startswith(request)]


@asynccontextmanager
async def asked(stack: SystemStack, folder: Path, name: str) -> AsyncIterator[tuple[Page, Served]]:
    """The page, served beside `turnkeeper serve --agents FOLDER --cors-origin <the page>`,
    signed in with `name`'s token, once `writer` was asked to save a note and its call waits."""
    assert CHROMIUM is not None
    async with (
        serving_page() as page_url,
        serving_agents(stack, folder, (name,), options=("--cors-origin", page_url)) as served,
        headless_chromium(CHROMIUM) as page,
    ):
        await page.goto(f"{page_url}/?server={served.url}&agent=writer")
        await page.fill("#token", served.tokens[name])
        await page.click("#signin button")
        # A new chat: the page asks for a turn in flight (`resume: true`), the server holds no
        # conversation yet and says 404, which to the page is nothing to resume, not an error.
        reconnect = f"GET {served.url}/v1/agents/writer/chat/"
        await until(lambda: answered(page, reconnect), bool, "the page to ask for a turn in flight")
        await asyncio.sleep(1)  # an error, were one shown, renders within milliseconds
        assert "no conversation" not in await page.text()
        await page.fill("#message", "Save a note that says hello.")
        await page.click("#send")
        await page.wait_for_text("waiting for your approval")
        yield page, served


async def report_of(served: Served, name: str, monkeypatch: pytest.MonkeyPatch) -> AgentReport:
    """The report of `name`'s one turn, the turn `GET /v1/turns` lists for `name`. Read with the
    Python client: a conversation's turn ids hold a `/`, which no `/v1/turns/{id}` path takes."""
    headers = {"Authorization": f"Bearer {served.tokens[name]}"}
    async with httpx.AsyncClient(base_url=served.url, headers=headers, timeout=30) as http:
        [turn] = (await http.get("/v1/turns")).json()
    client = await connect_like(served.worker, monkeypatch)
    return await turnkeeper.turn(client, turn["workflow_id"]).result()


def decisions(report: AgentReport) -> list[tuple[str, bool, str]]:
    return [(d.tool, d.approved, d.approver) for d in report.decisions]


async def test_the_page_streams_a_turn_approves_its_call_and_resumes_after_a_reload(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    writer(stack, folder, key, fake.slow(fake.text("Saved the note to out.md."), ANSWER_DELAY_S))
    name = f"alice-{key}"
    async with asked(stack, folder, name) as (page, served):
        shown = await page.text()
        assert "I will save the note." in shown and "write_file" in shown
        assert "content\nhello" in shown  # the input, field by field
        assert "chat=" in page.url and served.tokens[name] not in page.url
        await page.screenshot(ARTIFACTS / "chat-web-approval.png", "main")

        await page.click("button.approve")
        await page.wait_for_text("write_file done")  # its result, before the slow answer
        # The model is still answering: a reload drops the stream, and the page resumes it.
        await page.reload()
        shown = await page.wait_for_text("Saved the note to out.md.", timeout_s=60)
        assert "Save a note that says hello." in shown and "write_file" in shown
        chat_id = page.url.split("chat=")[1].split("&")[0]
        resumed = f"GET {served.url}/v1/agents/writer/chat/{chat_id}/stream"
        assert resumed in page.requests, page.requests

        report = await report_of(served, name, monkeypatch)
        assert report.outcome == "completed" and report.cost_usd > 0
        # The cost of the finish chunk's metadata: the turn's own.
        await page.wait_for_text(f"Cost: ${report.cost_usd:.4f}")
        await page.screenshot(ARTIFACTS / "chat-web.png", "main")
    assert decisions(report) == [("write_file", True, name)]
    assert (served.worker.workspace / "out.md").read_text() == "hello"


async def test_a_call_rejected_from_the_page_is_not_run(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    writer(stack, folder, key, fake.text("I did not save it."))
    name = f"bob-{key}"
    async with asked(stack, folder, name) as (page, served):
        await page.click("button.reject")
        shown = await page.wait_for_text("I did not save it.")
        assert "rejected" in shown
        report = await report_of(served, name, monkeypatch)
        await page.wait_for_text(f"Cost: ${report.cost_usd:.4f}")
    assert decisions(report) == [("write_file", False, name)]
    assert not (served.worker.workspace / "out.md").exists()
