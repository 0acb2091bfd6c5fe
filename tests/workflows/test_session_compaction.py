"""Compaction in a session: a turn that continues the conversation by reference (`history_ref`)
compacts the whole conversation, not only its own exchange. Every request stays under
`max_input_tokens` and is valid (the fake refuses an orphaned tool_result with a 400), the
session's `messages` query and its stored conversation keep every message, and the next turn
continues the whole conversation, never the compacted requests."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from turnkeeper.activities.store.conversation_store import ConversationStore
from turnkeeper.contracts.turn import AgentReport
from turnkeeper.workflows.llm.compaction import SUMMARY_INSTRUCTIONS

from tests.conftest import TurnRunner, failure_of, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.fakes.anthropic_replies import JsonDict, MessageReply, Reply
from tests.fakes.fake_anthropic import script_marker
from tests.workflows.test_compaction import CHAPTER, request_tokens, sizes
from tests.workflows.test_sessions import _settled, _turn_input
from turnkeeper.client.sessions import SessionHandle, start_session
from turnkeeper.payloads.stores import open_store

LIMIT = 2_000
READS = 3  # ~1,450 tokens a turn: one turn fits under the limit, the conversation does not
TURNS = 3
SUMMARY = "Summary: the agent read chapter.md several times; it holds 30 lines."


def session_reader(reads: int) -> Callable[[JsonDict], Reply]:
    """The model of every turn: reads the chapter `reads` times, then answers; asked for a
    summary, writes one. A request whose last message is not a tool result begins a turn."""
    left = 0
    calls = 0

    def reply(body: JsonDict) -> Reply:
        nonlocal left, calls
        if fake.system_text(body.get("system")) == SUMMARY_INSTRUCTIONS:
            return fake.text(SUMMARY)
        last = body["messages"][-1]["content"]
        if not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last):
            left = reads
        if left == 0:
            return fake.text("Done reading.")
        left -= 1
        calls += 1
        use = {"type": "tool_use", "id": f"toolu_session_{calls}", "name": "read_file"}
        return MessageReply(({**use, "input": {"path": "chapter.md"}},), stop_reason="tool_use")

    return reply


async def compacting_session(turns: TurnRunner, key: str, strategy: str, **agent: Any) -> Any:
    turns.fake.script(key, [session_reader(READS)] * 100)
    (turns.workspace / "chapter.md").write_text(CHAPTER)
    fields = {
        "tools": ["read_file"],
        "max_iterations": READS + 2,
        "compaction": {"strategy": strategy, "max_input_tokens": LIMIT},
    }
    return await start_session(
        turns.client,
        session_id=f"session-{key}",
        agent=scripted_request(key, agent=fields | agent)["agent"],
        task_queue=turns.task_queue,
    )


async def converse(session: SessionHandle, key: str) -> list[AgentReport]:
    reports = []
    for n in range(1, TURNS + 1):
        # The summary call has a system prompt of its own: the fake finds the script here.
        marker = f" {script_marker(key)}" if n == 1 else ""
        turn = await session.send(f"Turn {n}: read chapter.md {READS} times.{marker}")
        reports.append(await turn.result())
        await _settled(session)
    return reports


async def test_a_long_session_compacts_the_whole_conversation(turns: TurnRunner) -> None:
    key = new_key()
    session = await compacting_session(turns, key, "drop_oldest")
    reports = await converse(session, key)

    requests = turns.fake.requests_for(key)
    print("session request sizes (tokens, bytes):", sizes(requests))
    assert all(r.attempt is not None for r in requests)  # none refused with a 400
    assert max(request_tokens(r) for r in requests) <= LIMIT
    assert len(requests) == TURNS * (READS + 1)
    assert all(report.output == "Done reading." for report in reports)
    # Later turns left out the oldest exchanges, of earlier turns too, keeping the first
    # message and the question the turn answers.
    last_turn = requests[-(READS + 1) :]
    for request in last_turn:
        first = json.dumps(request.body["messages"][0])
        assert "Turn 1: read chapter.md" in first
        assert f"Turn {TURNS}: read chapter.md" in json.dumps(request.body["messages"])
    assert "earlier messages of this conversation were left out" in json.dumps(last_turn[0].body)

    # Nothing is lost: the messages query and the stored conversation hold every message.
    everything = [m for report in reports for m in report.messages]
    assert len(everything) == TURNS * (2 * READS + 2)
    assert await session.messages() == everything
    status = await session.status()
    assert status.conversation_ref == reports[-1].conversation_ref
    store = ConversationStore(open_store(turns.settings))
    stored = await store.load(reports[-1].conversation_ref or "")
    assert stored.messages == everything
    # The earlier conversation reaches the turn by reference: a later turn's history is about
    # the size of the first turn's, not that plus the conversation so far.
    first = await _history_bytes(turns, reports[0].task_id)
    last = await _history_bytes(turns, reports[-1].task_id)
    print("history bytes of the first and last turn:", first, last)
    assert last < first * 1.25  # the conversation inline would add ~15 KB


async def test_the_turn_after_a_compacted_one_continues_the_whole_conversation(
    turns: TurnRunner,
) -> None:
    key = new_key()
    session = await compacting_session(turns, key, "drop_oldest")
    reports = await converse(session, key)

    # Each turn's conversation_ref extends the one before: the whole conversation, not the
    # compacted requests' (whose first message carries the note).
    store = ConversationStore(open_store(turns.settings))
    sofar: list[Any] = []
    for report in reports:
        sofar += report.messages
        stored = await store.load(report.conversation_ref or "")
        assert stored.messages == sofar
        assert "left out" not in json.dumps([m.model_dump() for m in stored.messages])


@pytest.mark.parametrize("strategy", ["summarize"])
async def test_a_summarizing_session_bills_its_summaries_to_the_turns(
    turns: TurnRunner, strategy: str
) -> None:
    price = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}
    key = new_key()
    session = await compacting_session(turns, key, strategy, price=price)
    reports = await converse(session, key)

    requests = turns.fake.requests_for(key)
    summaries = [
        r for r in requests if fake.system_text(r.body.get("system")) == SUMMARY_INSTRUCTIONS
    ]
    assert summaries
    assert max(request_tokens(r) for r in requests) <= LIMIT
    assert all(r.attempt is not None for r in requests)
    # Every call, summaries included, is billed to its turn and so to the session.
    assert sum(report.llm_calls for report in reports) == len(requests)
    assert sum(report.usage.input_tokens for report in reports) == sum(
        request_tokens(r) for r in requests
    )
    status = await _settled(session)
    assert status.cost_usd == pytest.approx(sum(report.cost_usd for report in reports))
    assert SUMMARY in json.dumps(requests[-1].body["messages"][0])
    # Each turn goes on from the compaction of the one before: its first request is the
    # earlier view plus the new message, and a summary is written only when that is too long.
    compacted = reports[1].history_compaction
    assert compacted is not None and compacted.summary == SUMMARY
    child = await _turn_input(turns, f"session-{key}/turn-3")
    assert child["history_compaction"] == compacted.model_dump(exclude_defaults=True)
    turn_calls = [r for r in requests if r not in summaries]
    print("summarizing session: request sizes", sizes(turn_calls), "summaries", len(summaries))
    assert len(summaries) <= TURNS - 1  # before, every later turn summarized afresh


async def _history_bytes(turns: TurnRunner, workflow_id: str) -> int:
    history = await turns.client.get_workflow_handle(workflow_id).fetch_history()
    return sum(event.ByteSize() for event in history.events)


DROP = {"strategy": "drop_oldest", "max_input_tokens": LIMIT}


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"history_compaction": {"left_out": 2}}, "needs the history_ref it was made for"),
        (
            {"history_ref": "sha256:00", "history_compaction": {"left_out": 2}, "agent": {}},
            "history_compaction: needs agent.compaction",
        ),
        ({"history_ref": "sha256:00", "history_compaction": {"left_out": 0}}, "left_out"),
        ({"history_ref": "sha256:00", "history_compaction": {"cut": 2}}, "history_compaction.cut"),
    ],
)
async def test_a_history_compaction_that_cannot_apply_is_an_invalid_request(
    turns: TurnRunner, fields: dict[str, Any], problem: str
) -> None:
    agent = fields.pop("agent", {"compaction": DROP})
    error, _ = await failure_of(turns, scripted_request(new_key(), agent=agent, **fields))

    assert error.type == "InvalidTurnRequest"
    assert problem in error.message


@pytest.mark.parametrize(
    ("left_out", "problem"),
    [(1, "two user messages"), (3, "not below the 3 messages after the first")],
)
async def test_a_history_compaction_that_does_not_fit_the_conversation_is_refused(
    turns: TurnRunner, left_out: int, problem: str
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(("list_files", {"path": "."})), fake.text("Listed.")])
    earlier = await turns.run(scripted_request(key, agent={"compaction": DROP}))
    assert len(earlier.messages) == 4

    request = scripted_request(
        key,
        agent={"compaction": DROP},
        history_ref=earlier.conversation_ref,
        history_compaction={"left_out": left_out},
    )
    error, partial = await failure_of(turns, request)

    assert error.type == "InvalidTurnRequest"
    assert error.message.startswith("history_compaction.left_out: ")
    assert problem in error.message
    assert partial.llm_calls == 0
