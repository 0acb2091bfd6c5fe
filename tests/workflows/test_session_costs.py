"""What a session adds up is what its turns cost: cache reads at the cache price, a fallback
model's calls at its own price, and compaction summaries (which go through the fallback chain
like every model call) billed to the turn that made them."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from turnkeeper.contracts.pricing import PRICING_TABLE, cost_usd
from turnkeeper.contracts.turn import Usage
from turnkeeper.workflows.llm.compaction import SUMMARY_INSTRUCTIONS

from tests.conftest import TurnRunner, make_settings, new_key, run_on_server, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.fakes import openai_replies as openai
from tests.fakes.anthropic_replies import JsonDict, MessageReply, Reply, estimate_tokens
from tests.fakes.fake_anthropic import FakeAnthropic, script_marker
from tests.workflows.test_compaction import CHAPTER
from tests.workflows.test_prompt_cache import LONG_PROMPT
from tests.workflows.test_sessions import _settled, _turn_input
from turnkeeper.client.sessions import start_session

SONNET = "anthropic:claude-sonnet-4-6"
GPT = "openai:gpt-4.1"


async def test_the_session_adds_up_cache_reads_and_the_fallback_price(turns: TurnRunner) -> None:
    assert turns.openai is not None
    key = new_key()
    # Turn 1 on Anthropic, reading its cache on the second call; turn 2's primary is dead.
    turns.fake.script(
        key,
        [fake.tool_calls(("list_files", {"path": "."})), fake.text("One."), fake.overloaded()],
        prompt_cache=True,
    )
    turns.openai.script(key, [openai.text("unused")] * 2 + [openai.text("Two.", cached_tokens=8)])
    agent = scripted_request(key, agent={"fallback_models": [GPT]})["agent"]
    agent["system_prompt"] += LONG_PROMPT
    session = await start_session(
        turns.client,
        session_id=f"session-{key}",
        agent=agent,
        constraints={"cost_budget_usd": 5},
        task_queue=turns.task_queue,
    )

    first = await (await session.send("List the files")).result()
    await _settled(session)
    second_turn = await session.send("And again")
    second = await second_turn.result()

    assert first.models_used == [SONNET] and first.usage.cache_read_tokens > 0
    assert first.cost_usd == pytest.approx(cost_usd(first.usage, PRICING_TABLE[SONNET]))
    assert second.models_used == [GPT] and second.usage.cache_read_tokens == 8
    assert second.cost_usd == pytest.approx(cost_usd(second.usage, PRICING_TABLE[GPT]))
    # The second turn's budget was what the first left, and the session adds both up.
    child = await _turn_input(turns, second_turn.id)
    assert child["task"]["constraints"]["cost_budget_usd"] == pytest.approx(5 - first.cost_usd)
    status = await _settled(session)
    assert status.cost_usd == pytest.approx(first.cost_usd + second.cost_usd)


READS = 3
USAGE = {"input_tokens": 100, "output_tokens": 10}
SUMMARY = "Summary: the agent read chapter.md several times; it holds 30 lines."


def reader_with_a_dead_summarizer() -> Any:
    """Every turn reads the chapter three times, then answers, at a fixed usage; a summary
    request finds the primary overloaded (the fallback writes it)."""
    left = 0
    calls = 0

    def reply(body: JsonDict) -> Reply:
        nonlocal left, calls
        if fake.system_text(body.get("system")) == SUMMARY_INSTRUCTIONS:
            return fake.overloaded()
        last = body["messages"][-1]["content"]
        if not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last):
            left = READS
        if left == 0:
            return fake.text("Done reading.", usage=USAGE)
        left -= 1
        calls += 1
        use = {"type": "tool_use", "id": f"toolu_cost_{calls}", "name": "read_file"}
        return MessageReply(({**use, "input": {"path": "chapter.md"}},), "tool_use", USAGE)

    return reply


async def test_summaries_go_through_the_fallback_chain_and_bill_the_session(
    turns: TurnRunner,
) -> None:
    assert turns.openai is not None
    key = new_key()
    turns.fake.script(key, [reader_with_a_dead_summarizer()] * 100)
    turns.openai.script(key, [openai.text(SUMMARY)])
    (turns.workspace / "chapter.md").write_text(CHAPTER)
    agent = scripted_request(
        key,
        agent={
            "tools": ["read_file"],
            "max_iterations": READS + 2,
            "compaction": {"strategy": "summarize", "max_input_tokens": 2_000},
            "fallback_models": [GPT],
            # No cooldown: the turn's own calls stay on the primary, only summaries fail over.
            "fallback_cooldown_s": 0,
        },
    )["agent"]
    session = await start_session(
        turns.client, session_id=f"session-{key}", agent=agent, task_queue=turns.task_queue
    )
    reports = []
    for n in range(1, 4):
        marker = f" {script_marker(key)}" if n == 1 else ""  # the summary call's script
        reports.append(await (await session.send(f"Turn {n}: read it.{marker}")).result())
        await _settled(session)

    anthropic = turns.fake.requests_for(key)
    summaries = turns.openai.requests_for(key)
    answered = [
        r for r in anthropic if fake.system_text(r.body.get("system")) != SUMMARY_INSTRUCTIONS
    ]
    assert summaries, "no compaction summary was asked for"
    # Each summary: two attempts on the dead primary (fallback_after_attempts), then GPT.
    assert len(anthropic) - len(answered) == 2 * len(summaries)
    assert all(r.body["messages"][0]["content"] == SUMMARY_INSTRUCTIONS for r in summaries)
    assert sum(r.llm_calls for r in reports) == len(answered) + len(summaries)
    assert any(GPT in r.models_used for r in reports)
    assert SUMMARY in json.dumps(anthropic[-1].body["messages"][0])

    # Each call priced as the model that answered it: the turn's calls as Sonnet, the
    # summaries as GPT-4.1 (the fake counts a chat completion's tokens from its JSON).
    sonnet = Usage(input_tokens=100, output_tokens=10)
    summary_message = {"role": "assistant", "content": SUMMARY, "refusal": None}
    expected = len(answered) * cost_usd(sonnet, PRICING_TABLE[SONNET]) + sum(
        cost_usd(
            Usage(
                input_tokens=estimate_tokens(len(json.dumps(r.body["messages"]))),
                output_tokens=estimate_tokens(len(json.dumps(summary_message))),
            ),
            PRICING_TABLE[GPT],
        )
        for r in summaries
    )
    assert sum(r.cost_usd for r in reports) == pytest.approx(expected)
    status = await _settled(session)
    assert status.cost_usd == pytest.approx(expected)


async def test_a_summary_no_model_writes_fails_the_turn_as_llm_unavailable(
    skipping_env: WorkflowEnvironment, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(key, [reader_with_a_dead_summarizer()] * 20)
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    (settings.workspace / "chapter.md").write_text(CHAPTER * 2)  # compacts within one turn
    request = scripted_request(
        key,
        agent={
            "tools": ["read_file"],
            "compaction": {"strategy": "summarize", "max_input_tokens": 2_000},
        },
        task={"input": f"Read it. {script_marker(key)}"},
    )

    with pytest.raises(WorkflowFailureError) as failure:
        await run_on_server(skipping_env.client, settings, fake_anthropic, request)

    error = failure.value.cause
    assert isinstance(error, ApplicationError)
    assert error.type == "LLMUnavailable"  # not the activity's own LLMTransient
    assert "summarizes earlier messages" in error.message and "529" in error.message
