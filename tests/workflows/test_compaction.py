"""Opt-in compaction: a long turn on the fake Messages API (which refuses an orphaned tool_result
or an unanswered tool_use with a 400, as the API does) keeps every request under
`max_input_tokens`, summaries are billed, a provider's "context too long" compacts once and
calls again, and the transcript keeps every message."""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.contrib.opentelemetry import OpenTelemetryPlugin
from temporalio.testing import WorkflowEnvironment
from turnkeeper.contracts.names import QUERY_TRANSCRIPT
from turnkeeper.contracts.turn import AgentReport
from turnkeeper.workflows.llm.compaction import SUMMARY_INSTRUCTIONS

from tests.conftest import (
    TurnRunner,
    failure_of,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.anthropic_replies import (
    JsonDict,
    MessageReply,
    Reply,
    estimate_tokens,
    request_text_chars,
)
from tests.fakes.fake_anthropic import FakeAnthropic, ReceivedRequest, script_marker
from tests.support.telemetry_capture import capture
from tests.workflows.test_continue_as_new import eager_env, run_ids  # noqa: F401 (a fixture)
from turnkeeper.client.events import turn_events

LIMIT = 2_000
READS = 14
# ~450 tokens a read: a few reads fit under the limit, fourteen are three times over it.
CHAPTER = "".join(
    f"line {i:03}: the keeper trimmed the wick and wrote it down.\n" for i in range(30)
)


def reader(reads: int) -> Callable[[JsonDict], Reply]:
    """The model of a long turn: reads the chapter `reads` times, one call after another, then
    answers; and, asked for a summary, writes one. Tool ids are unique across the turn: the
    fake's own ids follow the number of assistant messages, which compaction lowers."""
    calls = itertools.count(1)

    def reply(body: JsonDict) -> Reply:
        if fake.system_text(body.get("system")) == SUMMARY_INSTRUCTIONS:
            return fake.text("The agent read chapter.md several times; it holds 30 lines.")
        n = next(calls)
        if n > reads:
            return fake.text(f"Read it {reads} times.")
        use = {"type": "tool_use", "id": f"toolu_read_{n}", "name": "read_file"}
        return MessageReply(({**use, "input": {"path": "chapter.md"}},), stop_reason="tool_use")

    return reply


def long_turn(
    turns: TurnRunner, strategy: str | None, reads: int = READS, **agent: Any
) -> dict[str, Any]:
    key = new_key()
    turns.fake.script(key, [reader(reads)] * (reads + 2))
    (turns.workspace / "chapter.md").write_text(CHAPTER)
    compaction = {"strategy": strategy, "max_input_tokens": LIMIT} if strategy else None
    return scripted_request(
        key,
        agent={"tools": ["read_file"], "max_iterations": reads + 2, "compaction": compaction}
        | agent,
        # The summary call has a system prompt of its own: the fake finds the script here.
        task={"input": f"Read chapter.md again and again. {script_marker(key)}"},
    )


def request_tokens(request: ReceivedRequest) -> int:
    """The request's input as the fake counts it (and bills it in `usage`)."""
    return estimate_tokens(request_text_chars(request.body))


def sizes(requests: list[ReceivedRequest]) -> list[tuple[int, int]]:
    return [(request_tokens(r), len(json.dumps(r.body))) for r in requests]


async def test_without_compaction_the_same_turn_outgrows_the_limit(turns: TurnRunner) -> None:
    request = long_turn(turns, None)
    report = await turns.run(request)

    requests = turns.fake.requests_for(_key(request))
    print("uncompacted request sizes (tokens, bytes):", sizes(requests))
    assert max(request_tokens(r) for r in requests) > 3 * LIMIT
    assert report.output == f"Read it {READS} times."


async def test_drop_oldest_keeps_every_request_under_the_limit(turns: TurnRunner) -> None:
    request = long_turn(turns, "drop_oldest")
    handle = await turns.start(request)
    report: AgentReport = await handle.result()

    requests = turns.fake.requests_for(_key(request))
    print("drop_oldest request sizes (tokens, bytes):", sizes(requests))
    assert len(requests) == READS + 1
    assert all(r.attempt is not None for r in requests)  # none refused with a 400
    assert max(request_tokens(r) for r in requests) <= LIMIT
    assert report.output == f"Read it {READS} times."
    # Every message stays in the report and the transcript; only requests were shortened.
    assert len(report.messages) == 2 * READS + 2
    transcript = await handle.query(QUERY_TRANSCRIPT)
    assert len(transcript) == len(report.messages)
    # The first user message always goes, with a note of what was left out.
    for r in requests:
        first = r.body["messages"][0]
        assert first["role"] == "user"
        assert "Read chapter.md again and again." in json.dumps(first)
    last = requests[-1].body["messages"][0]["content"][-1]["text"]
    assert "earlier messages of this conversation were left out" in last
    events = [e async for e in turn_events(turns.client, handle.id)]
    compacted = [e for e in events if e.kind == "compacted"]
    assert compacted and all(e.strategy == "drop_oldest" for e in compacted)
    assert all(e.removed_messages and e.removed_messages % 2 == 0 for e in compacted)
    assert all(e.tokens_after is not None and e.tokens_after <= LIMIT for e in compacted)
    assert all(e.text is None and e.input is None for e in compacted)  # counts, no content


async def test_summarize_keeps_requests_under_the_limit_and_bills_the_summaries(
    turns: TurnRunner,
) -> None:
    price = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}
    request = long_turn(turns, "summarize", price=price)
    handle = await turns.start(request)
    report: AgentReport = await handle.result()

    every = turns.fake.requests_for(_key(request))
    summaries = [r for r in every if fake.system_text(r.body.get("system")) == SUMMARY_INSTRUCTIONS]
    turn_calls = [r for r in every if r not in summaries]
    print("summarize request sizes (tokens, bytes):", sizes(turn_calls))
    print("summary call sizes (tokens, bytes):", sizes(summaries))
    assert summaries and len(turn_calls) == READS + 1
    assert max(request_tokens(r) for r in every) <= LIMIT
    # Billed and counted like every model call: the fake bills each request's own text.
    assert report.llm_calls == len(every)
    assert report.usage.input_tokens == sum(request_tokens(r) for r in every)
    expected = (
        sum(request_tokens(r) * 3.0 / 1e6 for r in every) + report.usage.output_tokens * 15.0 / 1e6
    )
    assert report.cost_usd == pytest.approx(expected)
    later = turn_calls[-1].body["messages"][0]["content"][-1]["text"]
    assert later.startswith("[Summary of ")
    assert "The agent read chapter.md several times" in later
    # The summary call quotes the conversation in a user message, never in a system prompt.
    quoted = summaries[0].body["messages"][0]["content"][0]["text"]
    assert "result of toolu_read_1: line 000" in quoted


async def test_context_too_long_compacts_once_and_calls_again(turns: TurnRunner) -> None:
    key = new_key()
    long_reader = reader(6)

    def reply(body: JsonDict) -> Reply:
        if request_text_chars(body) > 9_000:  # the provider's window is smaller than we think
            return fake.context_window_exceeded()
        return long_reader(body)

    turns.fake.script(key, [reply] * 10)
    (turns.workspace / "chapter.md").write_text(CHAPTER)
    agent = {
        "tools": ["read_file"],
        "compaction": {"strategy": "drop_oldest", "max_input_tokens": 100_000},
    }
    handle = await turns.start(scripted_request(key, agent=agent))
    report: AgentReport = await handle.result()

    assert report.output == "Read it 6 times."
    events = [e async for e in turn_events(turns.client, handle.id)]
    [compacted] = [e for e in events if e.kind == "compacted"]
    assert compacted.trigger == "context_too_long"


async def test_context_too_long_with_nothing_left_to_leave_out_fails_the_turn(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.context_window_exceeded()])
    agent = {"compaction": {"strategy": "drop_oldest", "max_input_tokens": 100_000}}

    error, partial = await failure_of(turns, scripted_request(key, agent=agent))

    assert error.type == "LLMContextTooLong"
    assert error.message.endswith("; compaction found no earlier exchange left to leave out")
    assert partial.llm_calls == 0


async def test_context_too_long_without_compaction_fails_the_turn(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.context_window_exceeded()])

    error, _ = await failure_of(turns, scripted_request(key))

    assert error.type == "LLMContextTooLong"


@pytest.mark.parametrize(
    ("compaction", "problem"),
    [
        ({"strategy": "truncate", "max_input_tokens": 5000}, "agent.compaction.strategy"),
        ({"strategy": "drop_oldest", "max_input_tokens": 10}, "agent.compaction.max_input_tokens"),
        ({"strategy": "drop_oldest"}, "agent.compaction.max_input_tokens: Field required"),
        ({"strategy": "drop_oldest", "max_input_tokens": 5000, "x": 1}, "agent.compaction.x"),
    ],
)
async def test_a_bad_compaction_is_an_invalid_request(
    turns: TurnRunner, compaction: dict[str, Any], problem: str
) -> None:
    error, _ = await failure_of(
        turns, scripted_request(new_key(), agent={"compaction": compaction})
    )

    assert error.type == "InvalidTurnRequest"
    assert problem in error.message


def _key(request: dict[str, Any]) -> str:
    return request["task"]["id"].removeprefix("task-")


async def test_each_compaction_is_one_span_around_its_summary_call_despite_replays(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    telemetry = capture()
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    runner = TurnRunner(client, settings.task_queue, settings, fake_anthropic)
    # Fewer reads than the other tests: without a cache every workflow task replays the whole
    # turn, so its cost grows with the square of its length; nine reads compact twice.
    request = long_turn(runner, "summarize", reads=9)
    telemetry.clear_spans()
    # No workflow cache: every workflow task replays the turn from its start.
    async with running_worker(
        client, settings, fake_anthropic, plugins=[OpenTelemetryPlugin()], max_cached_workflows=0
    ):
        handle = await runner.start(request)
        await handle.result()
        events = [e async for e in turn_events(client, handle.id)]

    compactions = [e for e in events if e.kind == "compacted"]
    spans = [s for s in telemetry.spans() if s.name == "compaction"]
    assert len(spans) == len(compactions) >= 2
    for span, event in zip(spans, compactions, strict=True):
        attributes = dict(span.attributes or {})
        assert attributes["turnkeeper.compaction.strategy"] == "summarize"
        assert attributes["turnkeeper.compaction.removed_messages"] == event.removed_messages
        assert attributes["turnkeeper.compaction.tokens_after"] == event.tokens_after
        children = [
            s for s in telemetry.spans() if s.parent and s.parent.span_id == span.context.span_id
        ]
        assert [s.name for s in children if s.name.startswith("model_call")] == [
            "model_call claude-sonnet-4-6"
        ]


async def test_compaction_carries_over_continue_as_new(
    eager_env: WorkflowEnvironment,  # noqa: F811
    fake_anthropic: FakeAnthropic,
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    runner = TurnRunner(eager_env.client, settings.task_queue, settings, fake_anthropic)
    request = long_turn(runner, "drop_oldest")
    async with running_worker(eager_env.client, settings, fake_anthropic):
        handle = await runner.start(request)
        report: AgentReport = await handle.result()

    assert len(await run_ids(eager_env.client, handle.id)) >= 2
    requests = fake_anthropic.requests_for(_key(request))
    assert len(requests) == READS + 1
    assert max(request_tokens(r) for r in requests) <= LIMIT
    assert len(report.messages) == 2 * READS + 2
