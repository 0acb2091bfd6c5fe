"""Served agents driven over AG-UI by the client nobody here wrote (docs/ag-ui.md):
`@ag-ui/client`'s `HttpAgent` from npm (`tests/interop/agui_client.mjs`), a Node process of its
own, against `turnkeeper serve --agents DIR` beside `python worker.py` and the fake model. The
client checks every stream it reads against the protocol (its verifier refuses an event out of
order), so a run that reaches its end here is a run AG-UI accepts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import turnkeeper
from bench.ag_ui import first_token
from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.ag_ui_serving import agui_client, of_type
from tests.system.conftest import SystemStack
from tests.system.driving import connect_like
from tests.system.mcp_serving import (
    Served,
    approval_agent,
    http_client,
    serving_agents,
    write_agent,
)


def workflow_of(run: dict[str, Any]) -> str:
    """The turn a run followed, as its RUN_STARTED names it."""
    [started] = of_type(run["events"], "RUN_STARTED")
    workflow_id: str = started["metadata"]["turnkeeper"]["workflow_id"]
    return workflow_id


async def report_of(
    served: Served, workflow_id: str, monkeypatch: pytest.MonkeyPatch
) -> turnkeeper.AgentReport:
    client = await connect_like(served.worker, monkeypatch)
    return await turnkeeper.turn(client, workflow_id).result()


async def test_the_npm_client_is_interrupted_by_an_approval_and_resumes_the_turn(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    approval_agent(stack, folder, key, "writer")
    alice = f"alice-{key}"
    thread = f"thread-{key}"
    async with serving_agents(stack, folder, (alice,)) as served:
        out = await agui_client(served, alice, "writer", thread, "Write a note.")
        report = await report_of(served, workflow_of(out["runs"][0]), monkeypatch)

    assert "error" not in out, out.get("error")
    interrupted, resumed = out["runs"]
    assert interrupted["outcome"] == "interrupt"
    [asked] = interrupted["interrupts"]
    [announced] = of_type(interrupted["events"], "TOOL_CALL_START")
    assert asked["id"] == asked["toolCallId"] == announced["toolCallId"]
    assert (asked["reason"], announced["toolCallName"]) == ("tool_call", "write_file")
    assert asked["responseSchema"]["required"] == ["approved"]
    [args] = of_type(interrupted["events"], "TOOL_CALL_ARGS")
    assert json.loads(args["delta"]) == {"path": "out.md", "content": "hi"}
    waiting_state = of_type(interrupted["events"], "STATE_SNAPSHOT")[-1]["snapshot"]
    assert [call["call_id"] for call in waiting_state["pending"]] == [asked["id"]]
    # The resumed run goes on with the same turn: the call's result, the answer, the end.
    assert workflow_of(resumed) == workflow_of(interrupted)
    assert resumed["outcome"] == "success"
    [result] = of_type(resumed["events"], "TOOL_CALL_RESULT")
    assert result["toolCallId"] == asked["id"]
    assert json.loads(result["content"]) == {"tool": "write_file", "is_error": False}
    text = "".join(e["delta"] for e in of_type(resumed["events"], "TEXT_MESSAGE_CONTENT"))
    assert text == "Done."
    assert resumed["result"]["output"] == "Done."
    assert resumed["result"]["cost_usd"] == pytest.approx(report.cost_usd)
    assert out["state"]["workflow_id"] == workflow_of(resumed)
    assert out["state"]["cost_usd"] == pytest.approx(report.cost_usd)
    assert out["state"]["pending"] == []
    [decision] = report.decisions
    assert (decision.approver, decision.approved) == (alice, True)
    assert decision.reason == "fine by the AG-UI client"
    assert out["pendingInterrupts"] == []


async def test_a_rejection_and_a_cancelled_interrupt_run_no_call(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rejected, cancelled = new_key(), new_key()
    folder = tmp_path / "agents"
    approval_agent(stack, folder, rejected, "rejected")
    approval_agent(stack, folder, cancelled, "cancelled")
    alice = f"alice-{rejected}"
    async with serving_agents(stack, folder, (alice,)) as served:
        no = await agui_client(
            served, alice, "rejected", f"t-{rejected}", "Go.", "--answer", "reject"
        )
        gone = await agui_client(
            served, alice, "cancelled", f"t-{cancelled}", "Go.", "--answer", "cancel"
        )
        reports = [
            await report_of(served, workflow_of(out["runs"][0]), monkeypatch) for out in (no, gone)
        ]

    assert [out["runs"][-1]["outcome"] for out in (no, gone)] == ["success", "success"]
    [no_decision], [gone_decision] = (report.decisions for report in reports)
    assert (no_decision.approved, no_decision.reason) == (False, "not from the AG-UI client")
    assert (gone_decision.approved, gone_decision.reason) == (
        False,
        "the approval was cancelled over AG-UI",
    )
    for out in (no, gone):
        [result] = of_type(out["runs"][-1]["events"], "TOOL_CALL_RESULT")
        assert json.loads(result["content"])["is_error"] is True


async def test_a_thread_is_one_conversation_of_several_turns(
    stack: SystemStack, tmp_path: Path
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    write_agent(folder, key, "talker")
    answers = [fake.text("First answer."), fake.text("Second answer."), fake.text("Third.")]
    stack.fake.script(key, answers)
    alice = f"alice-{key}"
    async with serving_agents(stack, folder, (alice,)) as served:
        out = await agui_client(served, alice, "talker", f"t-{key}", "Hello", "--messages", "2")
        second_request = stack.fake.requests_for(key)[-1]
        # The benchmark's probe, a third message on the same thread.
        async with http_client(served.tokens[alice]) as http:
            http.base_url = served.url
            timed = await first_token(http, "talker", f"t-{key}", "And a third?")

    assert "error" not in out, out.get("error")
    first, second = out["runs"]
    assert workflow_of(first) != workflow_of(second)
    assert [run["result"]["output"] for run in out["runs"]] == ["First answer.", "Second answer."]
    for run in out["runs"]:
        kinds = [event["type"] for event in run["events"]]
        assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
        assert kinds.index("STEP_STARTED") < kinds.index("TEXT_MESSAGE_CONTENT")
        assert run["firstTokenMs"] is not None
    # The second turn continues the first's conversation, as the runtime holds it.
    sent = json.dumps(second_request.body["messages"])
    assert "First answer." in sent and "Hello (1)" in sent and "Hello (2)" in sent
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user", "assistant"]
    assert timed.first_token_s is not None and timed.first_token_s <= timed.finished_s
    assert timed.workflow_id.startswith("conversation:talker:") and timed.workflow_id not in {
        workflow_of(first),
        workflow_of(second),
    }


async def test_the_npm_client_reads_a_refusal_as_an_http_error(
    stack: SystemStack, tmp_path: Path
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    write_agent(folder, key, "talker")
    alice = f"alice-{key}"
    async with serving_agents(stack, folder, (alice,)) as served:
        out = await agui_client(served, alice, "nobody", f"t-{key}", "Hello")

    assert out["error"]["status"] == 404
    assert out["runs"][0]["events"] == []
