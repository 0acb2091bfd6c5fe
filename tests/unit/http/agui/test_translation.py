"""A turn's events as AG-UI events (turnkeeper.http.agui.translation): what a client sees of a
model call (streamed or not), a tool call (approved first or not), a retried attempt's text,
budgets and sub-agents; every event parses as one of AG-UI's own."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from ag_ui.core import BaseEvent, Event, EventType
from ag_ui.encoder import EventEncoder
from pydantic import TypeAdapter
from turnkeeper.contracts.events import TurnEvent

from turnkeeper.http.agui.translation import TEXT_DISCARDED, Translation

TURN = "turn-agui-1"
AT = datetime(2026, 1, 1, tzinfo=UTC)
EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


def turn_event(kind: str, iteration: int = 1, **fields: Any) -> TurnEvent:
    return TurnEvent.model_validate({"kind": kind, "at": AT, "iteration": iteration, **fields})


def translated(*events: TurnEvent, translation: Translation | None = None) -> list[BaseEvent]:
    """The AG-UI events of `events`, each also round-tripped through AG-UI's wire encoding."""
    seen = translation or Translation(TURN)
    out = [ag for event in events for ag in seen.events(event)]
    for ag in out:
        data = EventEncoder().encode(ag).removeprefix("data: ").strip()
        assert EVENTS.validate_python(json.loads(data)).type == ag.type
    return out


def kinds(events: list[BaseEvent]) -> list[str]:
    return [event.type.value for event in events]


def test_a_streamed_model_call_is_a_step_holding_one_text_message() -> None:
    out = translated(
        turn_event("iteration_started"),
        turn_event("text_delta", text="Hel"),
        turn_event("text_delta", text="lo."),
        turn_event("model_call_finished", text="Hello.", stop_reason="end_turn"),
    )

    assert kinds(out) == [
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
    ]
    assert [e.delta for e in out if e.type == EventType.TEXT_MESSAGE_CONTENT] == ["Hel", "lo."]
    assert out[0].step_name == out[-1].step_name == "model call 1"
    assert {e.message_id for e in out[1:5]} == {f"{TURN}/1/text-1"}


def test_an_answer_that_was_not_streamed_is_sent_whole() -> None:
    out = translated(
        turn_event("iteration_started"),
        turn_event("model_call_finished", text="All done.", stop_reason="end_turn"),
    )

    assert kinds(out) == [
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
    ]
    assert out[2].delta == "All done."


def test_a_failed_attempts_text_is_taken_back_and_the_retry_is_a_new_message() -> None:
    out = translated(
        turn_event("iteration_started"),
        turn_event("text_delta", text="Half"),
        turn_event("text_discarded", attempt=1, discarded_chars=4, reason="overloaded"),
        turn_event("text_delta", text="Whole."),
        turn_event("model_call_finished", text="Whole."),
    )

    [custom] = [e for e in out if e.type == EventType.CUSTOM]
    assert custom.name == TEXT_DISCARDED
    assert custom.value == {"message_id": f"{TURN}/1/text-1", "discarded_chars": 4}
    starts = [e.message_id for e in out if e.type == EventType.TEXT_MESSAGE_START]
    assert starts == [f"{TURN}/1/text-1", f"{TURN}/1/text-2"]


def test_a_tool_call_is_announced_once_with_its_arguments_and_settles_as_a_result() -> None:
    arguments = {"path": "out.md", "content": "hi"}
    out = translated(
        turn_event("iteration_started"),
        turn_event("text_delta", text="Writing."),
        turn_event("model_call_finished", text="Writing.", stop_reason="tool_use"),
        turn_event("approval_requested", call_id="c1", tool="write_file", input=arguments),
        turn_event("approval_decided", call_id="c1", tool="write_file", approved=True),
        turn_event("tool_call_started", call_id="c1", tool="write_file", input=arguments),
        turn_event("tool_call_finished", call_id="c1", tool="write_file", is_error=False),
    )

    calls = [e for e in out if e.type.value.startswith("TOOL_CALL")]
    assert kinds(calls) == [
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
    ]
    start, args, _, result = calls
    assert (start.tool_call_id, start.tool_call_name) == ("c1", "write_file")
    assert json.loads(args.delta) == arguments
    assert result.tool_call_id == "c1" and result.message_id == "c1/result"
    assert json.loads(result.content) == {"tool": "write_file", "is_error": False}


def test_a_rejected_call_settles_as_a_rejection() -> None:
    out = translated(
        turn_event("approval_requested", call_id="c1", tool="write_file", input={"path": "a"}),
        turn_event(
            "approval_decided", call_id="c1", tool="write_file", approved=False, reason="no"
        ),
    )

    result = out[-1]
    assert result.type == EventType.TOOL_CALL_RESULT and result.tool_call_id == "c1"
    assert json.loads(result.content) == {
        "tool": "write_file",
        "is_error": True,
        "rejected": True,
        "reason": "no",
    }


def test_a_budget_status_is_a_snapshot_of_cost_and_what_is_left() -> None:
    [snapshot] = translated(
        turn_event(
            "budget_status",
            iteration=2,
            max_iterations=10,
            cost_usd=0.25,
            cost_budget_usd=1.0,
            elapsed_ms=4000,
            time_budget_ms=60000,
            llm_calls=2,
            tool_calls=1,
        )
    )

    assert snapshot.type == EventType.STATE_SNAPSHOT
    state = snapshot.snapshot
    assert state["workflow_id"] == TURN
    assert (state["cost_usd"], state["cost_left_usd"]) == (0.25, 0.75)
    assert (state["time_left_ms"], state["iterations_left"]) == (56000, 8)
    assert (state["llm_calls"], state["tool_calls"], state["pending"]) == (2, 1, [])


def test_a_budget_nobody_set_has_nothing_left_to_say() -> None:
    [snapshot] = translated(turn_event("budget_status", cost_usd=0.5))

    assert snapshot.snapshot["cost_budget_usd"] is None
    assert snapshot.snapshot["cost_left_usd"] is None


def test_a_subagent_is_a_tool_call_and_an_invocation_named_by_its_turn() -> None:
    child = f"{TURN}/researcher-1"
    out = translated(
        turn_event("subagent_started", call_id="c2", tool="researcher", workflow_id=child),
        turn_event(
            "subagent_finished",
            call_id="c2",
            tool="researcher",
            workflow_id=child,
            outcome="completed",
            is_error=False,
        ),
    )

    assert kinds(out) == [
        "TOOL_CALL_START",
        "TOOL_CALL_END",
        "SUBAGENT_STARTED",
        "SUBAGENT_FINISHED",
        "TOOL_CALL_RESULT",
    ]
    assert out[2].subagent_run_id == child and out[2].parent_tool_call_id == "c2"
    assert json.loads(out[4].content)["outcome"] == "completed"


def test_a_failed_subagent_is_a_subagent_error_with_its_type() -> None:
    child = f"{TURN}/researcher-1"
    out = translated(
        turn_event("subagent_started", call_id="c2", tool="researcher", workflow_id=child),
        turn_event(
            "subagent_finished",
            call_id="c2",
            tool="researcher",
            workflow_id=child,
            outcome="failed",
            is_error=True,
            error_type="TurnBudgetExceeded",
            message="over its cost budget",
        ),
    )

    [error] = [e for e in out if e.type == EventType.SUBAGENT_ERROR]
    assert (error.message, error.code) == ("over its cost budget", "TurnBudgetExceeded")


def test_an_interrupt_closes_what_is_open_and_the_resumed_run_reopens_the_subagent() -> None:
    child = f"{TURN}/researcher-1"
    translation = Translation(TURN)
    translated(
        turn_event("iteration_started"),
        turn_event("text_delta", text="Asking."),
        turn_event("subagent_started", call_id="c2", tool="researcher", workflow_id=child),
        translation=translation,
    )

    closing = translation.suspend()
    reopened = translation.resume()
    later = translated(
        turn_event("subagent_finished", call_id="c2", workflow_id=child, outcome="completed"),
        translation=translation,
    )

    assert kinds(closing) == ["STEP_FINISHED", "SUBAGENT_FINISHED"]
    assert closing[1].outcome.type == "suspended"
    assert kinds(reopened) == ["SUBAGENT_STARTED"] and reopened[0].subagent_run_id == child
    assert kinds(later) == ["SUBAGENT_FINISHED", "TOOL_CALL_RESULT"]


def test_kinds_with_no_ag_ui_word_send_nothing() -> None:
    out = translated(
        turn_event("turn_started"),
        turn_event("model_skipped", model="anthropic:x", reason="down"),
        turn_event("approval_decided", call_id="c1", approved=True),
        turn_event("compacted", strategy="drop_oldest"),
    )

    assert out == []
