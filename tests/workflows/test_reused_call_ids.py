"""Tool-call ids a turn has seen already: OpenAI-compatible servers and small models may number
calls `call_0`, `call_1` in every answer, or twice in one. A call under a seen id gets an error
result and neither runs nor waits, so that nothing sent for the earlier call settles it.
(A signed approval copied onto such a call, in a real worker: tests/system/test_signed_replays.)"""

from __future__ import annotations

import json
from typing import Any

from temporalio.client import WorkflowHandle
from turnkeeper.contracts.names import QUERY_STATUS, SIGNAL_APPROVE
from turnkeeper.contracts.signals import TurnStatus

from tests.conftest import TurnRunner, new_key, scripted_request, wait_for_pending
from tests.fakes import openai_replies as openai
from tests.support.waiting import until


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "function": {"name": name, "arguments": json.dumps(arguments)}}


async def wait_for_pending_call(handle: WorkflowHandle, call_id: str) -> TurnStatus:
    """Polls until `call_id`, and nothing else, waits."""
    return await until(
        lambda: handle.query(QUERY_STATUS, result_type=TurnStatus),
        lambda status: [p.call_id for p in status.pending] == [call_id],
        f"{call_id} waits alone",
    )


def answers(call_id: str, report: Any) -> list[Any]:
    """Every tool result the model got for `call_id`, in order."""
    return [
        block
        for message in report.messages
        for block in message.content
        if getattr(block, "tool_use_id", None) == call_id
    ]


async def test_an_id_repeated_in_one_answer_runs_the_first_call_only(turns: TurnRunner) -> None:
    assert turns.openai is not None
    key = new_key()
    (turns.workspace / "a.md").write_text("# Alpha\n")
    twice = (call("call_0", "read_file", path="a.md"), call("call_0", "list_files", path="."))
    turns.openai.script(
        key, [openai.ChatReply(None, twice, "tool_calls"), openai.text("Read a.md.")]
    )

    report = await turns.run(scripted_request(key, agent={"model": "openai:gpt-4.1"}))

    first, second = answers("call_0", report)
    assert report.tool_calls == 1
    assert not first.is_error and "# Alpha" in first.text()
    assert second.is_error and "'call_0' was used already" in second.text()


async def test_a_decision_for_an_earlier_call_does_not_settle_a_later_one_of_its_id(
    turns: TurnRunner,
) -> None:
    assert turns.openai is not None
    key = new_key()
    harmless = call("call_0", "write_file", path="note.md", content="harmless")
    again = call("call_0", "write_file", path="note.md", content="MALLORY")
    other = call("call_1", "write_file", path="other.md", content="other")
    turns.openai.script(
        key,
        [
            openai.ChatReply(None, (harmless,), "tool_calls"),
            openai.ChatReply(None, (again, other), "tool_calls"),
            openai.text("Done."),
        ],
    )
    handle = await turns.start(scripted_request(key, agent={"model": "openai:gpt-4.1"}))
    await wait_for_pending(handle)
    approval = {"call_id": "call_0", "approved": True, "approver": "alice"}
    await handle.signal(SIGNAL_APPROVE, approval)
    [waiting] = (await wait_for_pending_call(handle, "call_1")).pending
    await handle.signal(SIGNAL_APPROVE, approval)  # the same decision again
    await handle.signal(SIGNAL_APPROVE, {**approval, "call_id": "call_1", "approved": False})
    report = await handle.result()

    assert waiting.call_id == "call_1"  # the repeated call_0 never waited
    assert (turns.workspace / "note.md").read_text() == "harmless"
    assert answers("call_0", report)[1].is_error
    assert [(d.call_id, d.approved) for d in report.decisions] == [
        ("call_0", True),
        ("call_1", False),
    ]
