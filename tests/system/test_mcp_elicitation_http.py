"""An MCP server's question over the HTTP API and in the inbox, as users run them: `python
worker.py` with `TURNKEEPER_MCP_CONFIG` naming server-everything (npm, stdio), `turnkeeper
serve` beside it; the question is listed by `GET /v1/approvals` with kind `elicitation`, a
malformed answer is a 422 that leaves it waiting, and the answer (from `POST …/decisions`, or
from the inbox's form in Chromium) reaches the server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2 as httpx
import pytest

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.support.browser import find_chromium, headless_chromium
from tests.support.interop import npm_bin
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.driving import agent, task
from tests.system.serving import serving
from tests.system.test_http_api import ARTIFACTS, add_token

TOOL = "mcp__every__trigger-elicitation-request"
CHROMIUM = find_chromium()


@pytest.fixture
async def served(
    stack: SystemStack,
) -> AsyncIterator[tuple[str, dict[str, str], WorkerProcess]]:
    """The URL of `turnkeeper serve` for a worker with server-everything, alice's headers, and
    the worker (for more tokens)."""
    config = stack.tmp_path / "mcp.json"
    command = [str(npm_bin("mcp-server-everything")), "stdio"]
    config.write_text(json.dumps({"servers": {"every": {"command": command}}}))
    worker = await stack.start_worker(env={"TURNKEEPER_MCP_CONFIG": str(config)})
    token = await add_token(stack, worker, "alice")
    async with serving(stack, worker) as url:
        yield url, {"Authorization": f"Bearer {token}"}, worker


async def _asking(
    stack: SystemStack, http: httpx.AsyncClient, key: str
) -> tuple[str, dict[str, Any]]:
    """Starts a turn whose call's server asks; its workflow id and the listed question."""
    stack.fake.script(key, [fake.tool_calls((TOOL, {})), fake.text("Done.")])
    body = {"agent": agent(key, tools=[TOOL], approvers=["alice"]), "task": task(key)}
    started = await http.post("/v1/turns", json=body | {"id": f"ask-{key}"})
    assert started.status_code == 201, started.text
    workflow_id = started.json()["workflow_id"]

    async def listed() -> list[dict[str, Any]]:
        return [
            a for a in (await http.get("/v1/approvals")).json() if a["workflow_id"] == workflow_id
        ]

    [question] = await until(listed, bool, "the server's question to be listed")
    return workflow_id, question


async def _told(stack: SystemStack, key: str) -> str:
    """What the model was told of the call: the tool result in its second request."""
    second = (await stack.fake.wait_for_requests(key, 2, timeout_s=30))[1]
    return json.dumps(second.body["messages"][-1]["content"])


async def test_a_question_is_listed_and_answered_over_http(
    stack: SystemStack, served: tuple[str, dict[str, str], WorkerProcess]
) -> None:
    url, alice, worker = served
    key = new_key()
    async with httpx.AsyncClient(base_url=url, headers=alice, timeout=30) as http:
        workflow_id, question = await _asking(stack, http, key)
        assert question["kind"] == "elicitation" and question["tool"] == TOOL
        assert question["message"] == "Please provide inputs for the following fields:"
        assert question["requested_schema"]["required"] == ["name"]
        decisions = f"/v1/turns/{workflow_id}/decisions"

        # An operator sees every turn, but is no approver of this agent.
        bob = await add_token(stack, worker, "bob", "--role", "operator")
        not_his = await http.post(
            decisions,
            json={"call_id": question["call_id"], "approved": True, "input": {"name": "Bob"}},
            headers={"Authorization": f"Bearer {bob}"},
        )
        assert not_his.status_code == 403, not_his.text
        empty = await http.post(decisions, json={"call_id": question["call_id"], "approved": True})
        assert empty.status_code == 422 and "missing required argument 'name'" in empty.text
        wrong = await http.post(
            decisions, json={"call_id": question["call_id"], "approved": True, "input": {"name": 5}}
        )
        assert wrong.status_code == 422 and "5 is not of type 'string'" in wrong.json()["detail"]
        assert [a["call_id"] for a in (await http.get("/v1/approvals")).json()] == [
            question["call_id"]
        ]
        answered = await http.post(
            decisions,
            json={"call_id": question["call_id"], "approved": True, "input": {"name": "Ada"}},
        )
        assert answered.status_code == 200, answered.text
        assert answered.json()[0]["approver"] == "alice"

    assert "Name: Ada" in await _told(stack, key)


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (Debian: chromium)")
async def test_the_inbox_shows_the_question_as_a_form_and_sends_the_answer(
    stack: SystemStack, served: tuple[str, dict[str, str], WorkerProcess]
) -> None:
    url, alice, _ = served
    key = new_key()
    assert CHROMIUM is not None
    async with headless_chromium(CHROMIUM) as page:
        await page.goto(url + "/")
        await page.fill("#token", alice["Authorization"].removeprefix("Bearer "))
        await page.click("#signin button")
        await page.wait_for_text("signed in as alice")
        async with httpx.AsyncClient(base_url=url, headers=alice, timeout=30) as http:
            await _asking(stack, http, key)
        await page.wait_for_text("Please provide inputs for the following fields:")
        await page.fill("input[name=name]", "Grace Hopper")
        await page.screenshot(ARTIFACTS / "inbox-question.png")
        await page.click("button.approve")
        await page.wait_for_text("Answered the question of " + TOOL)

    told = await _told(stack, key)
    assert "Name: Grace Hopper" in told and "Favorite Integer: 42" in told  # the form's defaults
