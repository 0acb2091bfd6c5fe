"""`turnkeeper watch` lines for the events of budget extensions and compaction."""

from __future__ import annotations

from datetime import UTC, datetime

from turnkeeper.contracts.events import TurnEvent

from turnkeeper.console.watch import WatchState, describe

AT = datetime(2026, 11, 23, 15, 4, 5, tzinfo=UTC)


def test_budget_and_compaction_events_have_a_line() -> None:
    exhausted = TurnEvent(kind="budget_exhausted", at=AT, budget="cost", message="$1 spent")
    extended = TurnEvent(kind="budget_extended", at=AT, budget="cost", approver="alice")
    compacted = TurnEvent(
        kind="compacted",
        at=AT,
        strategy="drop_oldest",
        removed_messages=6,
        tokens_before=2100,
        tokens_after=900,
    )

    assert str(describe(exhausted)) == "15:04:05   ⏸ waits for more cost budget: $1 spent"
    assert str(describe(extended)) == "15:04:05   cost budget extended by alice"
    assert str(describe(compacted)) == (
        "15:04:05   compacted (drop_oldest): 6 messages left out, ~2100 → ~900 tokens"
    )


def test_a_discarded_stream_is_said_and_taken_back() -> None:
    delta = TurnEvent(kind="text_delta", at=AT, model="anthropic:m", text="an answ")
    discarded = TurnEvent(
        kind="text_discarded",
        at=AT,
        model="anthropic:m",
        attempt=1,
        discarded_chars=7,
        reason="LLMTransient: the connection broke mid-answer",
    )
    view = WatchState("turn-1")

    view.apply(delta)
    view.apply(discarded)

    assert view.streaming == ""
    assert str(describe(discarded)) == (
        "15:04:05   model anthropic:m attempt 1 broke off; its 7 streamed characters are "
        "discarded: LLMTransient: the connection broke mid-answer"
    )


def test_steers_and_interrupts_have_a_line() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    steered = describe(TurnEvent(kind="steered", at=at, author="alice", text="Be brief."))
    stopped = describe(TurnEvent(kind="interrupted", at=at, author="bob", reason="wrong file"))
    assert steered is not None and steered.plain.endswith("steered from alice: Be brief.")
    assert stopped is not None and stopped.plain.endswith("interrupted by bob: wrong file")
