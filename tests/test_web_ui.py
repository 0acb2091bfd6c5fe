"""A finished turn as a person sees it in the Temporal Web UI.

A dev server is started with its UI, one scripted turn runs to completion on it, and headless
Chromium opens the workflow's page; the screenshot is kept in `test-artifacts/web-ui-turn.png`.

The workflow's current details ("Iteration …") are not on that page: the UI shows them on the
"User Metadata" tab (`…/workflows/<id>/<run id>/user-metadata`), rendered inside a sandboxed
iframe, so the fixture opens that tab too (`web-ui-turn-details.png`).
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from turnkeeper.contracts.names import SEARCH_ATTRIBUTES
from turnkeeper.contracts.turn import AgentReport, TurnRequest

from tests.conftest import (
    SA_KEYS,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
    temporal_binary,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.browser import Page, find_chromium, headless_chromium
from turnkeeper.client.turns import start_turn_workflow

ARTIFACTS: Final = Path(__file__).resolve().parents[1] / "test-artifacts"
SCREENSHOT: Final = ARTIFACTS / "web-ui-turn.png"
DETAILS_SCREENSHOT: Final = ARTIFACTS / "web-ui-turn-details.png"
SUMMARY: Final = "model call 1 · claude-sonnet-4-6"
DETAILS: Final = "Iteration"
CHROMIUM: Final = find_chromium()

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium installed (Debian: apt-get install chromium)"
)


@dataclass(frozen=True)
class RenderedTurn:
    report: AgentReport
    page_text: str
    details_text: str


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
async def ui_env() -> AsyncIterator[tuple[WorkflowEnvironment, int]]:
    ui_port = free_port()
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter,
        dev_server_existing_path=temporal_binary("temporal"),
        search_attributes=[SA_KEYS[kind](name) for name, kind in SEARCH_ATTRIBUTES.items()],
        ui=True,
        ui_port=ui_port,
    )
    async with env:
        yield env, ui_port


@pytest.fixture(scope="module")
async def rendered_turn(
    ui_env: tuple[WorkflowEnvironment, int],
    fake_anthropic: FakeAnthropic,
    tmp_path_factory: pytest.TempPathFactory,
) -> RenderedTurn:
    """One turn (list_files, then an answer), its page rendered and screenshotted."""
    env, ui_port = ui_env
    settings = make_settings(tmp_path_factory.mktemp("web-ui"), f"tq-{uuid.uuid4()}")
    key = new_key()
    fake_anthropic.script(key, [fake.tool_calls(("list_files", {})), fake.text("All done.")])
    workflow_id = f"turn-web-ui-{key}"
    async with running_worker(env.client, settings, fake_anthropic):
        # Started as the console command starts turns: with the static summary.
        request = TurnRequest.model_validate(scripted_request(key))
        handle = await start_turn_workflow(
            env.client, request, workflow_id=workflow_id, task_queue=settings.task_queue
        )
        report = await handle.result()
        run_id = (await handle.describe()).run_id
        # The worker keeps running: the UI reads current details with a query it answers.
        assert CHROMIUM is not None
        page_url = f"http://127.0.0.1:{ui_port}/namespaces/default/workflows/{workflow_id}"
        async with headless_chromium(CHROMIUM) as page:
            page_text = await _rendered(page, page_url, SUMMARY, SCREENSHOT)
            details_url = f"{page_url}/{run_id}/user-metadata"
            details_text = await _rendered(page, details_url, DETAILS, DETAILS_SCREENSHOT)
    return RenderedTurn(report, page_text, details_text)


async def _rendered(page: Page, url: str, expected: str, screenshot: Path) -> str:
    """The page's text once `expected` shows (or after the wait), and its screenshot."""
    await page.goto(url)
    try:
        text = await page.wait_for_text(expected, timeout_s=45)
    except AssertionError:
        text = await page.text()  # the test fails on it; the screenshot shows why
    await page.screenshot(screenshot)
    return text


async def test_the_workflow_page_shows_the_model_call_summary(
    rendered_turn: RenderedTurn,
) -> None:
    assert rendered_turn.report.outcome == "completed"
    assert SUMMARY in rendered_turn.page_text
    assert "tool list_files" in rendered_turn.page_text
    assert SCREENSHOT.stat().st_size > 10_000


async def test_the_workflow_page_shows_the_current_details(rendered_turn: RenderedTurn) -> None:
    assert DETAILS in rendered_turn.details_text
    assert "test-agent · task-" in rendered_turn.details_text  # the static summary
    assert DETAILS_SCREENSHOT.stat().st_size > 10_000
