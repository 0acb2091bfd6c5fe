"""Remote A2A agents called as tools, whole turns on a real dev server and a real worker against
an agent served by a2a-sdk's own server (`tests/support/a2a_remote_agent.py`, a process of its
own): the task is followed between workflow timers to its artifact as one tool call, an agent
that asks for input is answered by the model calling again with the task, failures reach the
model as error results, stopping the turn cancels the remote task, a worker lost mid-follow
polls the same task on the next one (the message is sent once), and agents that cannot be read
cost their tool, never the turn."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import CancelledError
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import SIGNAL_APPROVE
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import (
    TurnRunner,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
    wait_for_pending,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.mcp_http_process import A2A_AGENT, HttpServerProcess
from tests.support.waiting import until
from tests.workflows.record_histories import answers_the_remote_question
from tests.workflows.test_mcp_tasks import activity_types
from turnkeeper.client.client import turn

BROKEN = {
    "html": "/not-a-card.json",
    "empty": "/empty/agent-card.json",
    "elsewhere": "/elsewhere/agent-card.json",
}


@pytest.fixture
async def remote_agent() -> AsyncIterator[HttpServerProcess]:
    server = HttpServerProcess(script=A2A_AGENT)
    await server.start()
    try:
        yield server
    finally:
        await server.kill()


def a2a_settings(tmp_path: Path, remote: HttpServerProcess) -> Any:
    agents: dict[str, Any] = {
        "lab": {"url": f"{remote.base_url}/", "timeout_s": 30},
        "garbled": {"url": f"{remote.base_url}/garbled/agent-card.json"},
        "down": {"url": "http://127.0.0.1:9/", "request_timeout_s": 3},
    }
    agents |= {name: {"url": remote.base_url + path} for name, path in BROKEN.items()}
    config = tmp_path / "a2a.json"
    config.write_text(json.dumps({"agents": agents}))
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    return dataclasses.replace(settings, a2a_config=config)


@pytest.fixture
async def a2a_turns(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path, remote_agent: HttpServerProcess
) -> AsyncIterator[TurnRunner]:
    settings = a2a_settings(tmp_path, remote_agent)
    async with running_worker(client, settings, fake_anthropic):
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic)


async def seen(remote: HttpServerProcess) -> dict[str, list[str]]:
    async with httpx.AsyncClient() as http:
        return (await http.get(f"{remote.base_url}/stats")).json()


def results(report: AgentReport) -> list[ToolResultBlock]:
    return [
        block
        for message in report.messages
        for block in message.content
        if isinstance(block, ToolResultBlock)
    ]


def calling(key: str, *agents: str) -> dict[str, Any]:
    """A scripted turn whose only tools are the remote agents `agents`."""
    return scripted_request(key, agent={"tools": [], "a2a_agents": list(agents)})


def lab(message: str, **more: str) -> tuple[str, dict[str, str]]:
    return ("lab", {"message": message, **more})


async def test_a_remote_task_is_followed_to_its_artifact_as_one_tool_call(
    a2a_turns: TurnRunner, remote_agent: HttpServerProcess
) -> None:
    key = new_key()
    a2a_turns.fake.script(key, [fake.tool_calls(lab("research 2 tides")), fake.text("done")])

    handle = await a2a_turns.start(calling(key, "lab"))
    report = await handle.result()

    [result] = results(report)
    assert "report on tides" in result.text() and not result.is_error
    assert report.tool_calls == 1 and report.outcome == "completed"
    kinds = await activity_types(handle)
    assert kinds.count("a2a_describe_agents") == 1 and kinds.count("a2a_send_message") == 1
    assert kinds.count("a2a_get_task") >= 2  # the task ran 2 s; polls are at least 1 s apart
    stats = await seen(remote_agent)
    call_id = report.messages[1].tool_uses()[0].id
    assert stats["message_ids"] == [f"turnkeeper:{handle.id}/{call_id}"]
    [offered] = a2a_turns.fake.requests_for(key)[0].body["tools"]
    assert offered["name"] == "lab" and "reports on a topic" in offered["description"]
    assert offered["input_schema"]["required"] == ["message"]


async def test_a_task_that_asks_for_input_is_answered_by_calling_again_with_it(
    a2a_turns: TurnRunner, remote_agent: HttpServerProcess
) -> None:
    key = new_key()
    steps = [fake.tool_calls(lab("ask")), answers_the_remote_question, fake.text("sunny, then")]
    a2a_turns.fake.script(key, steps)

    report = await a2a_turns.run(calling(key, "lab"))

    asked, answered = results(report)
    assert not asked.is_error and "needs more input" in asked.text()
    assert "Which city?" in asked.text()
    assert not answered.is_error and "weather in Paris: sunny" in answered.text()
    stats = await seen(remote_agent)
    assert len(stats["tasks"]) == 1  # the answer went into the same remote task
    assert stats["tasks"][0] in asked.text() and stats["tasks"][0] in answered.text()


async def test_failed_rejected_and_auth_required_tasks_are_error_results(
    a2a_turns: TurnRunner,
) -> None:
    key = new_key()
    calls = fake.tool_calls(lab("doomed"), lab("login"), lab("hello"))
    a2a_turns.fake.script(key, [calls, fake.text("ok")])

    report = await a2a_turns.run(calling(key, "lab"))

    failed, auth, hello = results(report)
    assert failed.is_error and "failed: the research database is gone" in failed.text()
    assert auth.is_error and "authentication that this worker cannot give" in auth.text()
    assert "sign in at the portal" in auth.text()
    assert not hello.is_error and hello.text() == "hello yourself"
    assert report.outcome == "completed" and report.tool_calls == 3


async def test_a_call_that_needs_approval_sends_nothing_until_approved(
    a2a_turns: TurnRunner, remote_agent: HttpServerProcess
) -> None:
    key = new_key()
    calls = fake.tool_calls(lab("research 0 refused"), lab("research 0 approved"))
    a2a_turns.fake.script(key, [calls, fake.text("ok")])
    request = calling(key, "lab") | {
        "task": {"id": key, "input": "go", "constraints": {"require_approval": ["lab"]}}
    }
    handle = await a2a_turns.start(request)

    pending = (await wait_for_pending(handle, count=2)).pending
    assert (await seen(remote_agent))["message_ids"] == []
    refused, approved = sorted(pending, key=lambda call: call.call_id)
    await handle.signal(SIGNAL_APPROVE, {"call_id": refused.call_id, "approved": False})
    await handle.signal(SIGNAL_APPROVE, {"call_id": approved.call_id, "approved": True})
    report = await handle.result()

    rejected, ran = results(report)
    assert rejected.is_error and "rejected" in rejected.text()
    assert "report on approved" in ran.text()
    stats = await seen(remote_agent)
    assert stats["message_ids"] == [f"turnkeeper:{handle.id}/{approved.call_id}"]


async def test_a_task_id_the_turn_never_saw_is_an_error_and_nothing_is_sent(
    a2a_turns: TurnRunner, remote_agent: HttpServerProcess
) -> None:
    key = new_key()
    a2a_turns.fake.script(key, [fake.tool_calls(lab("hi", task_id="t-1")), fake.text("ok")])

    report = await a2a_turns.run(calling(key, "lab"))

    [result] = results(report)
    assert result.is_error and "'t-1' is not a task of 'lab' in this turn" in result.text()
    assert (await seen(remote_agent))["message_ids"] == []


@pytest.mark.parametrize("stop", ["interrupt", "cancel"])
async def test_stopping_the_turn_cancels_the_remote_task(
    a2a_turns: TurnRunner, remote_agent: HttpServerProcess, stop: str
) -> None:
    key = new_key()
    a2a_turns.fake.script(key, [fake.tool_calls(lab("forever")), fake.text("ok")])
    handle = await a2a_turns.start(calling(key, "lab"))
    await until(lambda: activity_types(handle), lambda kinds: "a2a_get_task" in kinds, "a poll")

    if stop == "interrupt":
        await turn(a2a_turns.client, handle.id).interrupt("enough", author="carol")
        assert (await handle.result()).outcome == "interrupted"
    else:
        await handle.cancel()
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
        assert isinstance(failure.value.cause, CancelledError)

    stats = await seen(remote_agent)
    assert stats["cancelled"] == stats["tasks"] and len(stats["tasks"]) == 1
    assert "a2a_cancel_task" in await activity_types(handle)


async def test_agents_that_cannot_be_read_cost_their_tool_and_the_turn_goes_on(
    a2a_turns: TurnRunner,
) -> None:
    key = new_key()
    a2a_turns.fake.script(key, [fake.tool_calls(("garbled", {"message": "hi"})), fake.text("ok")])
    names = ["lab", "garbled", "down", "nowhere", *BROKEN]

    report = await a2a_turns.run(calling(key, *names))

    offered = [tool["name"] for tool in a2a_turns.fake.requests_for(key)[0].body["tools"]]
    # An unreachable card, HTML, a non-card, a card pointing elsewhere, an unknown name: not.
    assert offered == ["lab", "garbled"]
    [result] = results(report)
    assert result.is_error and "answered wrongly: its task has no id" in result.text()
    assert report.outcome == "completed"


async def test_a_worker_lost_mid_follow_leaves_the_next_one_polling_the_same_task(
    client: Client,
    fake_anthropic: FakeAnthropic,
    tmp_path: Path,
    remote_agent: HttpServerProcess,
) -> None:
    settings = a2a_settings(tmp_path, remote_agent)
    key = new_key()
    fake_anthropic.script(key, [fake.tool_calls(lab("research 4 storms")), fake.text("done")])
    runner = TurnRunner(client, settings.task_queue, settings, fake_anthropic)
    async with running_worker(client, settings, fake_anthropic):
        handle: WorkflowHandle[Any, AgentReport] = await runner.start(calling(key, "lab"))
        await until(lambda: activity_types(handle), lambda kinds: "a2a_get_task" in kinds, "a poll")
    # No worker now; a fresh one (no cached run) replays the history and goes on following.
    async with running_worker(client, settings, fake_anthropic):
        report = await handle.result()

    [result] = results(report)
    assert "report on storms" in result.text() and not result.is_error
    stats = await seen(remote_agent)
    assert len(stats["message_ids"]) == 1 and len(stats["tasks"]) == 1
    kinds = await activity_types(handle)
    assert kinds.count("a2a_send_message") == 1
