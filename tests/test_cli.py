"""The console command against the session's dev server, with a worker on a fresh task queue:
run, status, transcript, result, approve, reject, submit and pending, as a user types them."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import QUERY_STATUS
from turnkeeper.contracts.signals import PendingCall, TurnStatus
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import TurnRunner, new_key, scripted_request, wait_for_pending
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import script_marker
from tests.support.console_runs import (  # noqa: F401 (restore_logging: an autouse fixture)
    address_of,
    invoke,
    restore_logging,
    shown_by_command,
    until_shown,
)

ASK_USER = {
    "name": "ask_user",
    "description": "Ask the user a question",
    "input_schema": {"type": "object", "properties": {"question": {"type": "string"}}},
}


def connection(turns: TurnRunner) -> list[str]:
    return address_of(turns.client)


async def waiting_write(turns: TurnRunner, path: str = "out.md") -> tuple[WorkflowHandle, str]:
    """A turn whose model asks to write a file, parked on the approval; its handle and call id."""
    key = new_key()
    turns.fake.script(
        key,
        [fake.tool_calls(("write_file", {"path": path, "content": "hello"})), fake.text("Done.")],
    )
    handle = await turns.start(scripted_request(key))
    [call] = (await wait_for_pending(handle)).pending
    return handle, call.call_id


async def started(turns: TurnRunner, workflow_id: str) -> WorkflowHandle:
    """The handle of a turn another thread is starting, once the server knows it."""
    handle = turns.client.get_workflow_handle(workflow_id)
    for _ in range(100):
        try:
            await handle.describe()
            return handle
        except RPCError:
            await asyncio.sleep(0.05)
    raise AssertionError(f"{workflow_id} was never started")


def last_result(report: AgentReport) -> ToolResultBlock:
    [block] = [b for b in report.messages[-2].content if isinstance(b, ToolResultBlock)]
    return block


async def test_run_prints_the_output_and_the_web_ui_link(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("The answer is 42.")])
    workflow_id = f"turn-cli-{uuid.uuid4().hex[:8]}"

    result = await invoke(
        "run", "What is the answer?", "--model", "anthropic:claude-sonnet-4-6",
        "--system", script_marker(key), "--id", workflow_id,
        "--task-queue", turns.task_queue, "--ui-url", "http://ui.example:8233",
        *connection(turns),
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    assert "The answer is 42." in result.stdout
    assert "outcome      completed" in result.stdout
    assert f"http://ui.example:8233/namespaces/default/workflows/{workflow_id}" in result.stdout


async def test_run_json_prints_only_the_report_on_stdout(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("Short answer.")])

    result = await invoke(
        "run", "Hi", "--model", "anthropic:claude-sonnet-4-6", "--system", script_marker(key),
        "--agent-id", "json-agent", "--task-queue", turns.task_queue, "--json",
        *connection(turns),
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    report = AgentReport.model_validate_json(result.stdout)
    assert (report.output, report.agent_id, report.llm_calls) == ("Short answer.", "json-agent", 1)
    assert "turn-json-agent-" in result.stderr  # the id goes to stderr, out of the JSON's way


async def test_run_of_a_failing_turn_exits_1_with_the_type_and_partial_report(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(("list_files", {"path": "."})), fake.text("never")])

    result = await invoke(
        "run", "Look around", "--model", "anthropic:claude-sonnet-4-6",
        "--system", script_marker(key), "--max-iterations", "1",
        "--task-queue", turns.task_queue, *connection(turns),
    )  # fmt: skip

    assert result.exit_code == 1, result.output
    assert "turn failed: MaxIterationsExceeded: the turn reached max_iterations=1" in result.stdout
    assert "partial report" in result.stdout and "outcome      failed" in result.stdout


async def test_run_shows_a_pending_approval_with_the_commands_that_decide_it(
    turns: TurnRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    turns.fake.script(
        key, [fake.tool_calls(("write_file", {"path": "a.md", "content": "x"})), fake.text("ok")]
    )
    workflow_id = f"turn-follow-{uuid.uuid4().hex[:8]}"
    pending_shown = shown_by_command(monkeypatch, "pending")
    arguments = [
        "run", "Write it", "--model", "anthropic:claude-sonnet-4-6",
        "--system", script_marker(key), "--id", workflow_id,
        "--task-queue", turns.task_queue, *connection(turns),
    ]  # fmt: skip
    running = asyncio.create_task(invoke(*arguments))
    try:
        handle = await started(turns, workflow_id)
        [call] = (await wait_for_pending(handle)).pending
        await until_shown(pending_shown, running)
        approved = await invoke("approve", workflow_id, call.call_id, *connection(turns))
        result = await asyncio.wait_for(running, timeout=20)
    finally:
        if not running.done():  # never leave the command's thread following a live turn
            await turns.client.get_workflow_handle(workflow_id).terminate("test failed")
            await running

    assert approved.exit_code == 0, approved.output
    assert result.exit_code == 0, result.output
    assert f"write_file waits for approval (call {call.call_id}" in result.stdout
    assert f"turnkeeper approve {workflow_id} {call.call_id}" in result.stdout
    signal = f"temporal workflow signal --workflow-id {workflow_id} --name approve --input"
    assert signal in result.stdout
    assert f'"call_id": "{call.call_id}", "approved": true' in result.stdout


async def test_approve_sends_the_decision_and_result_prints_the_report(turns: TurnRunner) -> None:
    handle, call_id = await waiting_write(turns)

    approved = await invoke(
        "approve", handle.id, call_id, "--approver", "alice", *connection(turns)
    )
    result = await invoke("result", handle.id, *connection(turns))

    assert approved.exit_code == 0, approved.output
    assert f"approved {call_id} (write_file) of {handle.id}" in approved.stdout
    assert result.exit_code == 0, result.output
    assert "Done." in result.stdout
    assert (turns.workspace / "out.md").read_text() == "hello"


async def test_approve_refuses_a_call_that_is_not_pending(turns: TurnRunner) -> None:
    handle, call_id = await waiting_write(turns)

    result = await invoke("approve", handle.id, "toolu_nope", *connection(turns))

    assert result.exit_code == 1
    assert "Call 'toolu_nope' is not waiting for approval" in result.stderr
    assert f"Pending: {call_id} (write_file, waits for approval)" in result.stderr
    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert [p.call_id for p in status.pending] == [call_id]  # nothing was signalled
    await handle.terminate("test over")


async def test_reject_all_gives_the_model_the_reason(turns: TurnRunner) -> None:
    handle, call_id = await waiting_write(turns)

    result = await invoke(
        "reject", handle.id, "all", "--reason", "not today", "--approver", "bob",
        *connection(turns),
    )  # fmt: skip
    report: AgentReport = await handle.result()

    assert result.exit_code == 0, result.output
    assert f"rejected {call_id} (write_file)" in result.stdout
    assert last_result(report).is_error
    assert "rejected by bob: not today" in last_result(report).text()
    assert not (turns.workspace / "out.md").exists()


async def test_submit_sends_an_external_result_as_json(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key, [fake.tool_calls(("ask_user", {"question": "Colour?"})), fake.text("Blue it is.")]
    )
    handle = await turns.start(scripted_request(key, external_tools=[ASK_USER]))
    [call] = (await wait_for_pending(handle)).pending

    wrong_kind = await invoke("approve", handle.id, call.call_id, *connection(turns))
    result = await invoke(
        "submit", handle.id, call.call_id, "--output", '{"colour": "blue"}', *connection(turns)
    )
    report: AgentReport = await handle.result()

    assert wrong_kind.exit_code == 1
    assert "waits for external" in wrong_kind.stderr
    assert result.exit_code == 0, result.output
    assert last_result(report).text() == '{"colour": "blue"}'
    assert report.output == "Blue it is."


async def test_status_and_transcript_as_json_and_as_tables(turns: TurnRunner) -> None:
    handle, call_id = await waiting_write(turns)

    status = await invoke("status", handle.id, "--json", *connection(turns))
    transcript = await invoke("transcript", handle.id, "--json", *connection(turns))
    table = await invoke("status", handle.id, *connection(turns))
    readable = await invoke("transcript", handle.id, *connection(turns))

    assert status.exit_code == transcript.exit_code == 0, status.output + transcript.output
    turn_status = TurnStatus.model_validate_json(status.stdout)
    assert turn_status.state == "awaiting_approval"
    assert [(p.call_id, p.tool) for p in turn_status.pending] == [(call_id, "write_file")]
    messages = json.loads(transcript.stdout)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["content"][0]["id"] == call_id
    assert "awaiting_approval" in table.stdout and f"turnkeeper approve {handle.id}" in table.stdout
    assert "elapsed (excluding human waits)" in table.stdout
    assert "→ write_file" in readable.stdout and "Do the thing." in readable.stdout
    await handle.terminate("test over")


async def test_status_of_an_unknown_turn_says_so(turns: TurnRunner) -> None:
    result = await invoke("status", f"turn-nope-{uuid.uuid4().hex[:8]}", *connection(turns))
    assert result.exit_code == 1
    assert "No turn with id" in result.stderr


async def test_pending_lists_a_waiting_turn_with_its_commands(turns: TurnRunner) -> None:
    handle, call_id = await waiting_write(turns)

    listed = await _pending_until_listed(turns, handle.id)
    table = await invoke("pending", "--task-queue", turns.task_queue, *connection(turns))

    [entry] = listed
    assert entry["agent_id"] == "test-agent"
    assert [PendingCall.model_validate(p).call_id for p in entry["status"]["pending"]] == [call_id]
    assert f"turnkeeper approve {handle.id} {call_id}" in table.stdout
    assert '"path": "out.md"' in table.stdout
    await handle.terminate("test over")


async def _pending_until_listed(turns: TurnRunner, workflow_id: str) -> list[dict[str, object]]:
    """Visibility is eventually consistent: the TurnState update may take a moment to list."""
    for _ in range(50):
        result = await invoke(
            "pending", "--json", "--task-queue", turns.task_queue, *connection(turns)
        )
        assert result.exit_code == 0, result.output
        listed = json.loads(result.stdout)
        if any(entry["workflow_id"] == workflow_id for entry in listed):
            return listed
        await asyncio.sleep(0.2)
    raise AssertionError(f"{workflow_id} never appeared in `turnkeeper pending`")


async def test_remember_then_list_and_revoke_standing_approvals(turns: TurnRunner) -> None:
    # An agent of its own: its approval cache lives on this test's task queue.
    agent_id = f"agent-{new_key()}"
    key = new_key()
    write = ("write_file", {"path": "o.md", "content": "x"})
    turns.fake.script(key, [fake.tool_calls(write), fake.text("Done.")])
    handle = await turns.start(scripted_request(key, agent={"id": agent_id}))
    [call] = (await wait_for_pending(handle)).pending
    call_id = call.call_id

    approved = await invoke(
        "approve", handle.id, call_id, "--remember", "--approver", "zoe", *connection(turns)
    )
    await handle.result()
    listed = await invoke("standing", agent_id, "--json", *connection(turns))
    revoked = await invoke("revoke", agent_id, "write_file", "--by", "zoe", *connection(turns))
    again = await invoke("revoke", agent_id, "write_file", *connection(turns))

    assert approved.exit_code == 0, approved.output
    assert [a["tool"] for a in json.loads(listed.stdout)] == ["write_file"]
    assert json.loads(listed.stdout)[0]["approver"] == "zoe"
    assert revoked.exit_code == 0 and "revoked" in revoked.output
    assert again.exit_code == 1 and "no standing approval" in again.output
