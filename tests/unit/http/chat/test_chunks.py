"""A turn's events as UI message chunks (turnkeeper/http/chat/chunks.py): the turn is one
assistant message, each model call a step, text from deltas or from the call's answer, tool
calls with their results, approvals asked and answered, sub-agents as a data part."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.signals import PendingCall

from turnkeeper.http.chat.chunks import (
    UiMessageChunks,
    approval_id,
    finish_reason,
    parse_approval_id,
)

AT = datetime(2026, 11, 29, tzinfo=UTC)


def event(kind: str, **fields: Any) -> TurnEvent:
    return TurnEvent.model_validate({"kind": kind, "at": AT, **fields})


def run(chunks: UiMessageChunks, events: list[TurnEvent], **found: Any) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    for offset, each in enumerate(events):
        sent += chunks.event(offset, each, **found)
    return sent


def test_streamed_text_is_one_text_part_of_a_step() -> None:
    chunks = UiMessageChunks("turn-1")
    sent = run(
        chunks,
        [
            event("turn_started"),
            event("iteration_started", iteration=1),
            event("text_delta", text="Hel"),
            event("text_delta", text="lo"),
            event("model_call_finished", text="Hello", stop_reason="end_turn"),
        ],
    )
    assert sent == [
        {"type": "start-step"},
        {"type": "text-start", "id": "text-2"},
        {"type": "text-delta", "id": "text-2", "delta": "Hel"},
        {"type": "text-delta", "id": "text-2", "delta": "lo"},
        {"type": "text-end", "id": "text-2"},
    ]
    assert chunks.finished("stop", {"turn_id": "turn-1"}) == [
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop", "messageMetadata": {"turn_id": "turn-1"}},
    ]


def test_an_answer_that_did_not_stream_is_sent_whole_at_the_call_s_end() -> None:
    sent = run(
        UiMessageChunks("turn-1"),
        [event("iteration_started"), event("model_call_finished", text="Done.")],
    )
    assert sent == [
        {"type": "start-step"},
        {"type": "text-start", "id": "text-1"},
        {"type": "text-delta", "id": "text-1", "delta": "Done."},
        {"type": "text-end", "id": "text-1"},
    ]


def test_discarded_text_resets_the_step_and_the_retry_streams_a_new_part() -> None:
    sent = run(
        UiMessageChunks("turn-1"),
        [
            event("iteration_started"),
            event("text_delta", text="Broken"),
            event("text_discarded", attempt=1, discarded_chars=6),
            event("text_delta", text="Whole"),
            event("model_call_finished", text="Whole"),
        ],
    )
    assert [c["type"] for c in sent] == [
        "start-step",
        "text-start",
        "text-delta",
        "reset-step",
        "text-start",
        "text-delta",
        "text-end",
    ]
    assert sent[4]["id"] != sent[1]["id"]


def test_a_tool_call_is_a_tool_part_with_its_input_and_output() -> None:
    chunks = UiMessageChunks("turn-1")
    started = event("tool_call_started", call_id="c1", tool="read_file", input={"path": "a"})
    assert chunks.event(3, started) == [
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "read_file",
            "input": {"path": "a"},
        }
    ]
    assert chunks.running == {"c1"}
    finished = event("tool_call_finished", call_id="c1", tool="read_file", is_error=False)
    assert chunks.event(4, finished, output="hello") == [
        {"type": "tool-output-available", "toolCallId": "c1", "output": "hello"}
    ]
    assert chunks.running == set()
    failed = event("tool_call_finished", call_id="c2", tool="read_file", is_error=True)
    assert chunks.event(7, failed, output="no such file") == [
        {"type": "tool-output-error", "toolCallId": "c2", "errorText": "no such file"}
    ]


def test_text_before_a_tool_call_ends_before_its_part() -> None:
    sent = run(
        UiMessageChunks("turn-1"),
        [
            event("iteration_started"),
            event("text_delta", text="Reading."),
            event("tool_call_started", call_id="c1", tool="read_file", input={}),
        ],
    )
    assert [c["type"] for c in sent] == [
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "tool-input-available",
    ]


def test_an_approval_is_asked_on_the_call_s_part_and_its_answer_follows() -> None:
    chunks = UiMessageChunks("turn-1")
    asked = event("approval_requested", call_id="c1", tool="write_file", input={"path": "o"})
    approval = approval_id(5, "c1")
    assert chunks.event(5, asked) == [
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "write_file",
            "input": {"path": "o"},
        },
        {"type": "tool-approval-request", "approvalId": approval, "toolCallId": "c1"},
    ]
    assert chunks.waiting() == {"c1"}
    rejected = event("approval_decided", call_id="c1", approved=False, reason="not now")
    assert chunks.event(6, rejected) == [
        {"type": "tool-approval-response", "approvalId": approval, "approved": False,
         "reason": "not now"},
        {"type": "tool-output-denied", "toolCallId": "c1"},
    ]  # fmt: skip
    assert chunks.waiting() == set()


def test_a_continuation_knows_the_approvals_the_client_holds() -> None:
    approval = approval_id(5, "c1")
    chunks = UiMessageChunks("turn-1", told={"c1": approval})
    sent = run(
        chunks,
        [
            event("approval_decided", call_id="c1", approved=True),
            event("tool_call_started", call_id="c1", tool="write_file", input={"path": "o"}),
            event("tool_call_finished", call_id="c1", tool="write_file", is_error=False),
        ],
        output="written",
    )
    assert sent[0] == {"type": "tool-approval-response", "approvalId": approval, "approved": True}
    assert sent[-1] == {"type": "tool-output-available", "toolCallId": "c1", "output": "written"}


def test_an_approval_decided_before_the_client_was_told_sends_nothing() -> None:
    chunks = UiMessageChunks("turn-1")
    assert chunks.event(1, event("approval_decided", call_id="c9", approved=True)) == []


def test_waiting_for_answers_ends_the_step_and_the_message_for_now() -> None:
    chunks = UiMessageChunks("turn-1")
    chunks.event(0, event("iteration_started"))
    assert chunks.paused({"turn_id": "turn-1"}) == [
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls", "messageMetadata": {"turn_id": "turn-1"}},
    ]


def test_a_sub_agent_call_is_one_data_part_updated_in_place() -> None:
    chunks = UiMessageChunks("turn-1")
    started = event("subagent_started", call_id="c1", tool="researcher", workflow_id="child-1")
    assert chunks.event(2, started, call_input={"task": "find it"}) == [
        {
            "type": "data-subagent",
            "id": "c1",
            "data": {"call_id": "c1", "agent": "researcher", "workflow_id": "child-1",
                     "state": "running", "input": {"task": "find it"}},
        },
    ]  # fmt: skip
    assert chunks.delegated == {"c1"} and chunks.running == set()
    finished = event(
        "subagent_finished", call_id="c1", tool="researcher", workflow_id="child-1",
        outcome="completed", is_error=False,
    )  # fmt: skip
    assert chunks.event(3, finished, output="found") == [
        {
            "type": "data-subagent",
            "id": "c1",
            "data": {"call_id": "c1", "agent": "researcher", "workflow_id": "child-1",
                     "state": "finished", "output": "found", "outcome": "completed"},
        },
    ]  # fmt: skip
    assert chunks.delegated == set()


def test_a_sub_agent_s_waiting_call_is_asked_once_on_a_tool_part_of_its_own() -> None:
    chunks = UiMessageChunks("turn-1")
    child = PendingCall(
        call_id="c9", tool="write_file", input={"path": "o"}, kind="approval", since=AT,
        workflow_id="child-1",
    )  # fmt: skip
    own = child.model_copy(update={"call_id": "c8", "workflow_id": None})
    assert chunks.sub_agent_asks(6, [child, own]) == [
        {"type": "tool-input-available", "toolCallId": "c9", "toolName": "write_file",
         "input": {"path": "o"}},
        {"type": "tool-approval-request", "approvalId": approval_id(6, "c9"), "toolCallId": "c9"},
    ]  # fmt: skip
    assert chunks.sub_agent_asks(7, [child]) == [], "asked once"
    assert chunks.waiting() == {"c9"}


def test_the_turn_s_spend_is_message_metadata_as_it_changes() -> None:
    status = event("budget_status", cost_usd=0.25, cost_budget_usd=1.0, llm_calls=1, tool_calls=0)
    assert UiMessageChunks("turn-1").event(4, status) == [
        {
            "type": "message-metadata",
            "messageMetadata": {"turn_id": "turn-1", "cost_usd": 0.25, "cost_budget_usd": 1.0,
                                "llm_calls": 1, "tool_calls": 0},
        }
    ]  # fmt: skip


def test_a_failed_turn_is_an_error_then_a_finish() -> None:
    chunks = UiMessageChunks("turn-1")
    chunks.event(0, event("iteration_started"))
    chunks.event(1, event("text_delta", text="Hal"))
    assert [c["type"] for c in chunks.failed("LLMUnavailable: down", {})] == [
        "text-end",
        "finish-step",
        "error",
        "finish",
    ]


def test_approval_ids_carry_the_offset_and_the_call() -> None:
    assert parse_approval_id(approval_id(12, "toolu_01-x")) == (12, "toolu_01-x")
    assert parse_approval_id("approval-x-c1") is None
    assert parse_approval_id("c1") is None


def test_outcomes_are_the_sdk_s_finish_reasons() -> None:
    assert finish_reason("completed") == "stop"
    assert finish_reason("max_tokens") == "length"
    assert finish_reason("interrupted") == "interrupted"
    assert finish_reason("cancelled") == "other"
