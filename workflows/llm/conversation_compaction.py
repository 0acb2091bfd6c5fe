"""Compaction of a conversation that a turn continues by reference (`history_ref`, as a
session's turns do): such a turn holds only its own exchange, so a compacting one first reads the
earlier conversation, to count it and leave its oldest exchanges out too (and goes on from the
compaction of the turn before, `history_compaction`); and a compacted turn stores its whole,
uncompacted conversation at the end, so that the turn after it continues everything that was
said, not what the compacted requests showed the model."""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.activity_io import ConversationDelta, MessageDraft
    from turnkeeper.contracts.compaction import CompactedHistory
    from turnkeeper.contracts.messages import Message
    from turnkeeper.contracts.session import StoreConversationInput
    from turnkeeper.contracts.turn import AgentReport
    from turnkeeper.workflows.activity_calls import CarryOn, FailTurn
    from turnkeeper.workflows.failures import cause_message, fail
    from turnkeeper.workflows.llm.activity import call_context
    from turnkeeper.workflows.sessions.stored_conversations import (
        load_conversation,
        store_conversation,
    )
    from turnkeeper.workflows.turn_state import Turn


async def load_earlier(turn: Turn) -> None:
    """Reads the conversation a turn with `history_ref` continues, once, before its first call:
    compaction must see it to count it and to leave its oldest exchanges out. The activity's
    result is claim-checked, so history holds a reference, not the conversation."""
    ref = turn.request.history_ref
    if ref is None or turn.compaction.earlier_loaded:
        return

    def unreadable(err: ActivityError) -> tuple[str, str]:
        problem = f"the conversation this turn continues could not be read ({ref})"
        return errors.INVALID_TURN_REQUEST, f"history_ref: {problem}: {cause_message(err)}"

    loaded = await load_conversation(
        ref, "load the conversation to compact", FailTurn(turn, unreadable)
    )
    turn.compaction.load_earlier(loaded.messages)
    compacted = turn.request.history_compaction
    if compacted is not None:
        problem = _compaction_problem(compacted.left_out, loaded.messages)
        if problem:
            fail(turn, errors.INVALID_TURN_REQUEST, f"history_compaction.left_out: {problem}")
        turn.continue_compacted(compacted.left_out, compacted.summary)


def _compaction_problem(left_out: int, earlier: list[Message]) -> str | None:
    """Why `left_out` cannot be how the conversation `earlier` was compacted: the view must go
    on with an assistant message, so that roles alternate and no tool_result is orphaned."""
    if 1 + left_out >= len(earlier):
        return f"{left_out} is not below the {len(earlier) - 1} messages after the first"
    if earlier[1 + left_out].role != "assistant":
        return f"{left_out} would leave a request beginning with two user messages"
    return None


async def keep_whole_conversation(turn: Turn, report: AgentReport) -> AgentReport:
    """The report of a compacted turn, naming its whole conversation: the turn's compacted
    requests started a conversation of their own, but the turn after it (a session's next
    turn) continues everything that was said. Stored from what the store already had at the
    first compaction, so only this turn's later messages travel again."""
    window = turn.compaction.context_window
    if window.cut == 0:
        return report
    base = turn.compaction.whole_ref
    appended = turn.messages[turn.compaction.whole_count :]
    store = StoreConversationInput(
        conversation=ConversationDelta(
            base=base,
            append=[MessageDraft(role=m.role, content=list(m.content)) for m in appended],
        ),
        context=None if base is not None else call_context(turn),
    )
    # The compacted conversation still continues: the next turn sees what this one sent.
    unstored = CarryOn(
        None, "the whole conversation could not be stored; the report names the compacted one: %s"
    )
    summary = f"store the whole conversation ({len(appended)} new messages)"
    stored = await store_conversation(store, summary, unstored)
    if stored is None:
        return report
    turn.stored_whole_conversation(stored.conversation_ref)
    compacted = CompactedHistory(left_out=window.cut, summary=window.summary)
    return report.model_copy(
        update={"conversation_ref": stored.conversation_ref, "history_compaction": compacted}
    )
