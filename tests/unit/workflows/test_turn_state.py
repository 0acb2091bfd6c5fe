"""The turn's own state, changed only through its methods: the opening messages, billing a
model call, what the next call sends (and re-sends inline when the store lost the conversation),
the human clock that keeps waits out of the time budget, and the bounds on refused signals."""

from __future__ import annotations

from datetime import timedelta

from turnkeeper.contracts.activity_io import BlockRef, ModelCallResult
from turnkeeper.contracts.budget_extension import ExtendBudgetInput
from turnkeeper.contracts.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from turnkeeper.contracts.signals import MAX_REFUSED_DECISIONS
from turnkeeper.contracts.turn import Usage
from turnkeeper.workflows.turn_state import HumanClock, Settled, Turn, TurnProgress

from tests.unit.builders import START, request, turn

SECOND = timedelta(seconds=1)


def answered(t: Turn, model: str = "anthropic:claude-sonnet-4-6", ref: str = "conv-1") -> None:
    use = ToolUseBlock(id="u1", name="read_file", input={"path": "a.md"})
    t.record_model_call(
        ModelCallResult(
            message=Message(role="assistant", content=[use]),
            stop_reason="tool_use",
            usage=Usage(input_tokens=100, output_tokens=10),
            cost_usd=0.25,
            model=model,
            conversation_ref=ref,
            duration_ms=5,
            approval_required=["write_file"],
        )
    )


def test_a_fresh_turn_sends_the_task_as_its_first_message() -> None:
    t = turn()
    assert [m.text() for m in t.messages] == ["Do the thing."]
    assert [d.role for d in t.unsent] == ["user"]


def test_a_history_ending_with_user_takes_the_task_into_its_last_message() -> None:
    result = ToolResultBlock(tool_use_id="u0", content="ok")
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "u0", "name": "x"}]},
        {"role": "user", "content": [result.model_dump()]},
    ]
    t = turn(request(history=history))
    assert len(t.messages) == 3
    assert t.messages[-1].content == [result, TextBlock(text="Do the thing.")]


def test_a_model_call_is_billed_and_its_answer_appended() -> None:
    t = turn()
    answered(t)
    answered(t, model="openai:gpt-4.1", ref="conv-2")
    assert (t.spend.model_calls, t.spend.cost_usd, t.spend.usage.input_tokens) == (2, 0.5, 200)
    assert t.spend.models_used == ["anthropic:claude-sonnet-4-6", "openai:gpt-4.1"]
    assert t.conversation_ref == "conv-2"
    assert t.unsent == []
    assert t.tools.declared_approval == {"write_file"}


def test_tool_results_travel_as_references_when_a_tool_stored_them() -> None:
    t = turn()
    answered(t)
    small = ToolResultBlock(tool_use_id="u1", content="ok")
    big = ToolResultBlock(tool_use_id="u2", content="x" * 10)
    t.record_tool_results([Settled(small), Settled(big, "blob-7")])
    assert t.messages[-1].content == [small, big]
    assert t.unsent[-1].content == [small, BlockRef(ref="blob-7")]


def test_a_lost_conversation_is_re_sent_whole_and_inline() -> None:
    t = turn()
    answered(t)
    t.record_tool_results([Settled(ToolResultBlock(tool_use_id="u1", content="ok"), "blob-1")])
    t.resend_everything()
    assert (t.conversation_ref, t.context_ref) == (None, None)
    assert [d.role for d in t.unsent] == ["user", "assistant", "user"]
    assert not any(isinstance(b, BlockRef) for d in t.unsent for b in d.content)
    assert [d.content for d in t.unsent] == [m.content for m in t.messages]


def test_compacting_re_sends_the_view_and_remembers_the_whole_once() -> None:
    t = turn()
    answered(t)
    t.record_tool_results([Settled(ToolResultBlock(tool_use_id="u1", content="ok"))])
    answered(t, ref="conv-2")
    t.compact(cut=2, summary="read a.md")
    assert (t.compaction.whole_ref, t.compaction.whole_count) == ("conv-2", 4)
    assert t.compaction.context_window.compactions == 1
    first, last = t.unsent
    assert first.content[-1] == TextBlock(text=t.compaction.context_window.note())
    assert "read a.md" in t.compaction.context_window.note()
    assert last.content == t.messages[-1].content
    t.compact(cut=2, summary="again")
    assert (t.compaction.whole_ref, t.compaction.whole_count) == ("conv-2", 4)


def test_the_human_clock_counts_overlapping_waits_once() -> None:
    clock = HumanClock()
    clock.start(START)
    clock.start(START + SECOND)
    clock.stop(START + 2 * SECOND)
    assert clock.waited_ms(START + 3 * SECOND) == 3000
    clock.stop(START + 4 * SECOND)
    assert clock.waited_ms(START + 9 * SECOND) == 4000


def test_waiting_for_a_budget_extension_does_not_count_as_time() -> None:
    t = turn()
    asked = t.request_budget("iterations", "out of iterations", START + SECOND)
    assert (asked.number, t.budget.budget_request) == (1, asked)
    granted = t.grant_extension(ExtendBudgetInput(iterations=2), True, START + 5 * SECOND)
    assert (granted.request, granted.budget, granted.iterations, granted.signed) == (
        1,
        "iterations",
        2,
        True,
    )
    assert t.budget.budget_request is None
    assert t.active_ms(START + 6 * SECOND) == 2000
    assert t.elapsed_ms(START + 6 * SECOND) == 6000


def test_a_budget_request_given_up_ends_the_wait_without_an_extension() -> None:
    t = turn()
    t.request_budget("cost", "spent", START)
    t.give_up_budget_request(START + SECOND)
    assert (t.budget.budget_request, t.budget.budget_extensions, t.budget.budget_requests) == (
        None,
        [],
        1,
    )
    assert t.active_ms(START + SECOND) == 0


def test_refused_decisions_are_cut_short_and_only_the_latest_kept() -> None:
    t = turn()
    for n in range(MAX_REFUSED_DECISIONS + 5):
        t.approvals.refuse(f"call-{n}", "m" * 1000, "r" * 5000, START)
    assert len(t.approvals.refused_decisions) == MAX_REFUSED_DECISIONS
    assert t.approvals.refused_decisions[0].call_id == "call-5"
    assert len(t.approvals.refused_decisions[-1].approver) == 200
    assert len(t.approvals.refused_decisions[-1].reason) == 600
    assert (
        t.approvals.refused_decisions_dropped == 5
    )  # a flood cannot hide the attempts it pushed out


def test_the_report_s_output_is_the_last_assistant_text() -> None:
    t = turn()
    assert t.report("failed", START).output == ""
    t.messages.append(Message(role="assistant", content=[TextBlock(text="All done.")]))
    report = t.report("completed", START + SECOND)
    assert (report.output, report.outcome, report.duration_ms) == ("All done.", "completed", 1000)


def test_the_continue_as_new_carry_round_trips_through_json() -> None:
    t = turn()
    answered(t)
    t.begin_iteration()
    t.fallback.cool_down("openai:gpt-4.1", START + SECOND)

    carried = TurnProgress.model_validate_json(t.progress().model_dump_json())
    resumed = Turn.resume(t.request, carried)

    assert resumed == t
    assert "request" not in carried.model_dump()


def test_a_turn_that_waits_shows_what_for_until_it_ends() -> None:
    t = turn()
    t.follow_waits("awaiting_approval")
    assert t.state == "awaiting_approval"
    t.request_budget("cost", "spent", START)
    t.follow_waits("running")
    assert t.state == "awaiting_budget"
    t.end("failed", START + SECOND)
    t.follow_waits("running")
    assert (t.state, t.ended) == ("failed", START + SECOND)


def test_active_time_stops_at_the_end_even_during_a_wait() -> None:
    t = turn()
    t.start_waiting(START + 2 * SECOND)
    t.end("cancelled", START + 5 * SECOND)  # cancelled while it waited for an approval
    assert t.active_ms(START + 5 * SECOND) == 2000
    assert t.active_ms(START + 3600 * SECOND) == 2000  # a status read an hour later
    assert t.elapsed_ms(START + 3600 * SECOND) == 5000


def test_a_turn_cancelled_while_it_waits_for_budget_waits_for_nothing() -> None:
    t = turn()
    t.request_budget("cost", "spent", START)
    t.end("cancelled", START + SECOND)
    assert (t.state, t.budget.budget_request, t.budget.budget_requests) == ("cancelled", None, 1)


def test_whom_a_turn_belongs_to_is_carried_and_an_older_run_s_state_loads_without_it() -> None:
    owned = Turn.begin(request(), START, started_by="alice")
    resumed = Turn.resume(
        request(), TurnProgress.model_validate_json(owned.progress().model_dump_json())
    )
    assert resumed.started_by == "alice"
    assert resumed.report("completed", START).started_by == "alice"
    # What a run before `started_by` carried across continue-as-new.
    older = owned.progress().model_dump(mode="json")
    del older["started_by"]
    assert Turn.resume(request(), TurnProgress.model_validate(older)).started_by is None
