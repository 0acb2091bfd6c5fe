"""Human approvals and external (caller-executed) tools, through signals."""

from __future__ import annotations

from temporalio.client import WorkflowExecutionStatus
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import (
    QUERY_STATUS,
    QUERY_TRANSCRIPT,
    SIGNAL_APPROVE,
    SIGNAL_SUBMIT_TOOL_RESULT,
)
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import TurnRunner, new_key, scripted_request, wait_for_pending
from tests.fakes import fake_anthropic as fake

ASK_USER = {
    "name": "ask_user",
    "description": "Ask the user a question",
    "input_schema": {
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    },
}


def last_results(report: AgentReport) -> list[ToolResultBlock]:
    return [b for b in report.messages[-2].content if isinstance(b, ToolResultBlock)]


async def test_write_file_waits_for_approval_and_runs_when_approved(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("write_file", {"path": "out.md", "content": "hello"})),
            fake.text("Saved."),
        ],
    )
    handle = await turns.start(scripted_request(key))

    status = await wait_for_pending(handle)
    assert status.state == "awaiting_approval"
    [pending] = status.pending
    assert (pending.tool, pending.kind, pending.input["path"]) == (
        "write_file",
        "approval",
        "out.md",
    )
    # Waiting holds no activity open, and nothing was written yet.
    description = await handle.describe()
    assert not description.raw_description.pending_activities
    assert not (turns.workspace / "out.md").exists()

    await handle.signal(
        SIGNAL_APPROVE, {"call_id": pending.call_id, "approved": True, "approver": "alice"}
    )
    report = await handle.result()

    assert report.output == "Saved."
    assert (turns.workspace / "out.md").read_text() == "hello"
    assert not last_results(report)[0].is_error


async def test_rejection_becomes_an_error_result_with_the_reason(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("write_file", {"path": "out.md", "content": "hello"})),
            fake.text("Understood, not saved."),
        ],
    )
    handle = await turns.start(scripted_request(key))
    [pending] = (await wait_for_pending(handle)).pending

    await handle.signal(
        SIGNAL_APPROVE,
        {"call_id": pending.call_id, "approved": False, "reason": "not today", "approver": "bob"},
    )
    report = await handle.result()

    [result] = last_results(report)
    assert result.is_error
    assert "rejected by bob: not today" in result.text()
    assert not (turns.workspace / "out.md").exists()
    assert report.tool_calls == 0


async def test_require_approval_applies_to_any_named_tool(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(("list_files", {"path": "."})), fake.text("ok")])
    request = scripted_request(key, task={"constraints": {"require_approval": ["*"]}})
    handle = await turns.start(request)

    [pending] = (await wait_for_pending(handle)).pending
    assert pending.tool == "list_files"
    await handle.signal(SIGNAL_APPROVE, {"call_id": pending.call_id, "approved": True})
    assert (await handle.result()).output == "ok"


async def test_external_tool_waits_for_the_callers_result(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [fake.tool_calls(("ask_user", {"question": "Which colour?"})), fake.text("Blue it is.")],
    )
    handle = await turns.start(scripted_request(key, external_tools=[ASK_USER]))

    status = await wait_for_pending(handle)
    assert status.state == "awaiting_external"
    [pending] = status.pending
    assert (pending.tool, pending.kind) == ("ask_user", "external")
    # The model was offered the external tool with the caller's schema.
    offered = turns.fake.requests_for(key)[0].body["tools"]
    assert any(
        t["name"] == "ask_user" and t["input_schema"] == ASK_USER["input_schema"] for t in offered
    )

    await handle.signal(
        SIGNAL_SUBMIT_TOOL_RESULT, {"call_id": pending.call_id, "output": {"colour": "blue"}}
    )
    report = await handle.result()

    [result] = last_results(report)
    assert result.text() == '{"colour": "blue"}'
    assert not result.is_error
    assert report.tool_calls == 1


async def test_signals_for_unknown_decided_or_malformed_calls_are_ignored(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("write_file", {"path": "out.md", "content": "x"})),
            fake.text("done"),
        ],
    )
    handle = await turns.start(scripted_request(key))
    [pending] = (await wait_for_pending(handle)).pending

    await handle.signal(SIGNAL_APPROVE, {"call_id": "toolu_nope", "approved": True})
    await handle.signal(SIGNAL_APPROVE, {"approved": True})  # no call_id
    await handle.signal(SIGNAL_APPROVE, "yes please")  # not an object
    await handle.signal(SIGNAL_SUBMIT_TOOL_RESULT, {"call_id": pending.call_id, "output": 1})
    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert status.state == "awaiting_approval"
    assert [p.call_id for p in status.pending] == [pending.call_id]

    await handle.signal(SIGNAL_APPROVE, {"call_id": pending.call_id, "approved": False})
    await handle.signal(SIGNAL_APPROVE, {"call_id": pending.call_id, "approved": True})
    report = await handle.result()

    assert last_results(report)[0].is_error  # the first decision stands
    assert not (turns.workspace / "out.md").exists()
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED


async def test_transcript_query_shows_the_conversation_so_far(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("write_file", {"path": "a.md", "content": "x"})),
            fake.text("done"),
        ],
    )
    handle = await turns.start(scripted_request(key))
    [pending] = (await wait_for_pending(handle)).pending

    transcript = await handle.query(QUERY_TRANSCRIPT)
    assert [m["role"] for m in transcript] == ["user", "assistant"]
    assert transcript[1]["content"][0]["id"] == pending.call_id

    await handle.signal(SIGNAL_APPROVE, {"call_id": pending.call_id, "approved": True})
    await handle.result()
    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert status.state == "completed" and status.pending == []
