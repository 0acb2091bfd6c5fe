"""The inbox as an approver reads it (docs/http-api.md, "The approval inbox"), in Chromium
against `turnkeeper serve` and a worker process: the task and the agent's words before each
call, a write's diff against the file in the worker's workspace, cost and budgets left, a
sub-agent's call once under the turn a person started, and decisions from the keyboard. The
screenshots of the docs page are taken here, into `test-artifacts/` (copied into docs/ by hand:
a test run leaves the tracked files as they are)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.support.browser import Page, find_chromium, headless_chromium
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.driving import agent
from tests.system.test_http_api import served  # noqa: F401 (a fixture)

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = find_chromium()
NOTES_NOW = "# Lighthouse log\nThe lamp was lit at dusk.\nOil: low.\n"
# Markup in what a model writes is shown as its characters, never run or rendered.
NOTES_AFTER = "# Lighthouse log\nThe lamp was lit at dusk.\nOil: refilled, 2 litres.\n<b>NE</b>\n"
SAID = "The oil was refilled this morning, so I am updating the log."
HANDOVER = "Shift handover\n\nAll quiet; the fog horn was tested at 06:00.\n"


def budgeted_task(key: str, text: str) -> dict[str, Any]:
    constraints = {"cost_budget_usd": 1.0, "time_budget_ms": 600_000}
    return {"id": f"task-{key}", "input": text, "constraints": constraints}


def script_turns(stack: SystemStack) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two turns' bodies: one that rewrites notes.md with words before the call, and a lead
    whose sub-agent writes handover.md."""
    log_key, lead_key, writer_key = new_key(), new_key(), new_key()
    write = ("write_file", {"path": "notes.md", "content": NOTES_AFTER})
    stack.fake.script(log_key, [fake.tool_calls(write, text=SAID), fake.text("Updated.")])
    delegate = ("writer", {"task": "Write the shift handover note."})
    said = "I will have the writer draft it."
    stack.fake.script(lead_key, [fake.tool_calls(delegate, text=said), fake.text("Done.")])
    handover = ("write_file", {"path": "handover.md", "content": HANDOVER})
    drafting = "Drafting the handover note now."
    stack.fake.script(writer_key, [fake.tool_calls(handover, text=drafting), fake.text("Saved.")])
    writer = agent(writer_key, id="writer-agent", tools=["write_file"])
    subagents = [{"name": "writer", "description": "Writes notes.", "agent": writer}]
    log = {
        "agent": agent(log_key, id="keeper-agent"),
        "task": budgeted_task(log_key, "Record this morning's oil delivery in notes.md."),
        "id": f"inbox-log-{log_key}",
    }
    lead = {
        "agent": agent(lead_key, id="lead-agent", subagents=subagents),
        "task": budgeted_task(lead_key, "Prepare the shift handover."),
        "id": f"inbox-lead-{lead_key}",
    }
    return log, lead


async def select_call(page: Page, shown: str) -> None:
    """Moves the selection with `j` to the call whose card shows `shown`."""
    for _ in range(await page.count(".call")):
        if shown in await page.text_of(".call.selected"):
            return
        await page.press("j")
    raise AssertionError(f"no call shows {shown!r}")


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (Debian: chromium)")
async def test_the_inbox_shows_what_an_approver_needs_and_decides_from_the_keyboard(
    stack: SystemStack,
    served: tuple[WorkerProcess, str, str],  # noqa: F811 (the fixture imported above)
) -> None:
    worker, url, token = served
    (worker.workspace / "notes.md").write_text(NOTES_NOW)
    log, lead = script_turns(stack)
    alice = {"Authorization": f"Bearer {token}"}
    assert CHROMIUM is not None
    async with (
        headless_chromium(CHROMIUM) as page,
        httpx.AsyncClient(base_url=url, headers=alice, timeout=30) as http,
    ):
        for body in (log, lead):
            started = await http.post("/v1/turns", json=body)
            assert started.status_code == 201, started.text

        async def listed() -> list[Any]:
            return [a for a in (await http.get("/v1/approvals")).json() if a["depth"] == 1]

        # The sub-agent's turn lists its call, and the lead relays it: the API lists it once,
        # at the lead (which passes the decision on), saying where it waits.
        [below] = await until(listed, bool, "the sub-agent's call to be listed")
        assert below["workflow_id"] == lead["id"] and below["waits_in"] == f"{lead['id']}/writer-1"
        assert below["root_task"] == "Prepare the shift handover."
        assert below["task"] == "Write the shift handover note."

        async def child_waits() -> bool:
            listing = await http.get("/v1/turns", params={"state": "awaiting_approval"})
            return any(t["workflow_id"] == below["waits_in"] for t in listing.json())

        await until(child_waits, bool, "the sub-agent's turn to be listed as waiting")
        own = (await http.get("/v1/approvals")).json()
        assert [a["call_id"] for a in own].count(below["call_id"]) == 1

        await page.goto(url + "/")
        await page.fill("#token", token)
        await page.click("#signin button")
        text = await page.wait_for_text("Drafting the handover note now.")
        text = await page.wait_for_text(SAID)
        assert await page.count(".call") == 2 and await page.count(".turn") == 2
        assert f"Turn {lead['id']}" in text and "Prepare the shift handover." in text
        assert "in sub-agent writer-agent" in text and "Write the shift handover note." in text
        assert "Record this morning's oil delivery in notes.md." in text
        assert "of $1.0000" in text and "left" in text and "of 600.0 s" in text
        # The file's content as text, and the diff against the file in the worker's workspace.
        assert "Changes to notes.md" in text and "New file handover.md" in text
        assert "-Oil: low." in text and "+Oil: refilled, 2 litres." in text
        assert "+<b>NE</b>" in text and await page.count(".call b") == 0
        assert "All quiet; the fog horn was tested at 06:00." in text
        assert "\\n" not in text
        await page.screenshot(ARTIFACTS / "inbox.png")
        await select_call(page, "notes.md")
        await page.screenshot(ARTIFACTS / "inbox-diff.png", ".call.selected")

        await page.press("a")
        await page.wait_for_text("Approved write_file")
        # The call that is left is selected next: `r` rejects it.
        assert "handover.md" in await page.text_of(".call.selected")
        await page.press("r")
        await page.wait_for_text("Rejected write_file")
        await page.wait_for_text("Nothing waits for you.")
        refused = [line for line in page.console if "Content Security Policy" in line]
        assert refused == []

        async def ended(body: dict[str, Any]) -> bool:
            state = (await http.get(f"/v1/turns/{body['id']}")).json()["state"]
            return state == "completed"

        await until(lambda: ended(log), bool, "the log's turn to complete")
        await until(lambda: ended(lead), bool, "the lead's turn to complete")
    assert (worker.workspace / "notes.md").read_text() == NOTES_AFTER
    assert not (worker.workspace / "handover.md").exists()
