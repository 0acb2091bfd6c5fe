"""The HTTP API as users run it (docs/http-api.md): `turnkeeper tokens add`, then `turnkeeper
serve` as a process of its own beside `python worker.py`, driven with plain HTTP: a turn started,
its write approved as the token's identity, its events resumed with `Last-Event-ID`, and a steer
on the finished turn refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.support.browser import find_chromium, headless_chromium
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.driving import agent, task
from tests.system.serving import serving

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


async def add_token(stack: SystemStack, worker: WorkerProcess, name: str, *options: str) -> str:
    """`turnkeeper tokens add NAME --file tokens.json [options]`; the token it printed."""
    tokens = stack.tmp_path / "tokens.json"
    done = await stack.turnkeeper(
        "tokens", "add", name, "--file", str(tokens), *options, worker=worker
    )
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture
async def served(stack: SystemStack) -> AsyncIterator[tuple[WorkerProcess, str, str]]:
    """A worker, the URL of `turnkeeper serve` for its task queue, and alice's token."""
    worker = await stack.start_worker()
    token = await add_token(stack, worker, "alice")
    async with serving(stack, worker) as url:
        yield worker, url, token


def scripted_write(stack: SystemStack, path: str, content: str) -> str:
    """The script key of a model that writes `content` to `path`, then answers."""
    key = new_key()
    write = fake.tool_calls(("write_file", {"path": path, "content": content}))
    stack.fake.script(key, [write, fake.text("Done.")])
    return key


def event_ids(text: str) -> list[int]:
    return [int(line[4:]) for line in text.splitlines() if line.startswith("id: ")]


async def test_a_turn_started_approved_and_followed_over_http(
    stack: SystemStack, served: tuple[WorkerProcess, str, str]
) -> None:
    worker, url, token = served
    key = scripted_write(stack, "out.md", "hi")
    alice = {"Authorization": f"Bearer {token}"}
    body = {"agent": agent(key, approvers=["alice"]), "task": task(key), "id": f"http-{key}"}
    async with httpx.AsyncClient(base_url=url, headers=alice, timeout=30) as http:
        started = await http.post("/v1/turns", json=body)
        assert started.status_code == 201, started.text
        workflow_id = started.json()["workflow_id"]

        async def waiting() -> list[dict[str, Any]]:
            return [
                a
                for a in (await http.get("/v1/approvals")).json()
                if a["workflow_id"] == workflow_id
            ]

        [approval] = await until(waiting, bool, "the write to wait for approval")
        assert approval["tool"] == "write_file" and approval["input"]["path"] == "out.md"

        decided = await http.post(
            f"/v1/turns/{workflow_id}/decisions",
            json={"call_id": approval["call_id"], "approved": True, "reason": "fine"},
        )
        assert decided.status_code == 200, decided.text
        assert decided.json()[0]["approver"] == "alice"
        again = await http.post(
            f"/v1/turns/{workflow_id}/decisions",
            json={"call_id": approval["call_id"], "approved": True},
        )
        assert again.status_code == 409

        whole = await http.get(f"/v1/turns/{workflow_id}/events")
        ids = event_ids(whole.text)
        assert ids == sorted(set(ids)) and "event: turn_finished" in whole.text
        middle = ids[len(ids) // 2]
        resumed = await http.get(
            f"/v1/turns/{workflow_id}/events", headers={"Last-Event-ID": str(middle)}
        )
        assert event_ids(resumed.text) == [i for i in ids if i > middle]

        assert (await http.get(f"/v1/turns/{workflow_id}")).json()["state"] == "completed"
        steer = await http.post(f"/v1/turns/{workflow_id}/steer", json={"message": "Stop"})
        assert steer.status_code == 409 and "has ended" in steer.json()["detail"]
    assert (worker.workspace / "out.md").read_text() == "hi"


CHROMIUM = find_chromium()


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (Debian: chromium)")
async def test_the_inbox_signs_in_shows_a_call_and_approves_an_edit(
    stack: SystemStack, served: tuple[WorkerProcess, str, str]
) -> None:
    worker, url, token = served
    key = scripted_write(stack, "note.md", "draft")
    assert CHROMIUM is not None
    async with headless_chromium(CHROMIUM) as page:
        await page.goto(url + "/")
        await page.fill("#token", token)
        await page.click("#signin button")
        await page.wait_for_text("signed in as alice")
        body = {"agent": agent(key), "task": task(key), "id": f"inbox-{key}"}
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            started = await http.post(
                "/v1/turns", json=body, headers={"Authorization": f"Bearer {token}"}
            )
            assert started.status_code == 201, started.text
        # The page was open before the call waited: it appears without a reload.
        await page.wait_for_text("write_file")
        await page.press("e")  # the editor of the input as JSON opens on its key
        edited = '{\n  "path": "note.md",\n  "content": "final"\n}'
        await page.fill("textarea", edited)
        shown = await page.wait_for_text('+   "content": "final"')
        assert '-   "content": "draft"' in shown
        await page.screenshot(ARTIFACTS / "inbox-edit.png")
        await page.click("button.approve")
        await page.wait_for_text("Approved write_file")
        await page.screenshot(ARTIFACTS / "inbox-approved.png")

    async def written() -> str:
        path = worker.workspace / "note.md"
        return path.read_text() if path.exists() else ""

    assert await until(written, bool, "the approved edit to be written") == "final"
