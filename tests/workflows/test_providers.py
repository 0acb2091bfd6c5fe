"""Turns on the OpenAI-compatible provider, and the fallback chain across providers with its
per-model cooldown: the real dev server, the real SDKs, both fake APIs over HTTP."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from turnkeeper.contracts.pricing import PRICING_TABLE, cost_usd

from tests.conftest import (
    TurnRunner,
    failure_of,
    make_settings,
    new_key,
    run_on_server,
    scripted_request,
)
from tests.fakes import fake_anthropic as anthropic
from tests.fakes import openai_replies as openai
from tests.fakes.anthropic_replies import SlowReply
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fake_openai import FakeOpenAI
from tests.workflows.test_continue_as_new import eager_env, run_ids
from turnkeeper.client.events import turn_events

GPT = "openai:gpt-4.1"
__all__ = ["eager_env"]  # the fixture of the continue-as-new tests, used here too


def on_openai(key: str, **agent: Any) -> dict[str, Any]:
    return scripted_request(key, agent={"model": GPT, **agent})


async def test_a_turn_on_the_openai_fake_runs_parallel_tools_and_streams(
    turns: TurnRunner,
) -> None:
    assert turns.openai is not None
    (turns.workspace / "a.md").write_text("# Alpha\n")
    key = new_key()
    turns.openai.script(
        key,
        [
            openai.tool_calls(
                ("list_files", {"path": "."}), ("read_file", {"path": "a.md"}), text="Looking."
            ),
            openai.text("The workspace holds a.md, titled Alpha."),
        ],
    )

    handle = await turns.start(on_openai(key, stream=True))
    report = await handle.result()

    assert report.output == "The workspace holds a.md, titled Alpha."
    assert (report.llm_calls, report.tool_calls, report.models_used) == (2, 2, [GPT])
    results = report.messages[2].content
    assert [block.type for block in results] == ["tool_result", "tool_result"]
    assert "# Alpha" in results[1].text()  # type: ignore[union-attr]
    second = turns.openai.requests_for(key)[1].body
    assert [m["role"] for m in second["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
    ]
    assert report.cost_usd > 0 and report.usage.output_tokens > 0
    events = [event async for event in turn_events(turns.client, handle.id)]
    deltas = "".join(e.text or "" for e in events if e.kind == "text_delta")
    assert "titled Alpha" in deltas
    assert {e.model for e in events if e.kind == "model_call_finished"} == {GPT}


async def test_structured_output_on_the_openai_fake(turns: TurnRunner) -> None:
    assert turns.openai is not None
    key = new_key()
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    turns.openai.script(key, [openai.text("not json"), openai.text('{"n": 4}')])

    report = await turns.run(on_openai(key, tools=[], output_schema=schema))

    assert report.structured_output == {"n": 4}
    first = turns.openai.requests_for(key)[0].body["messages"][0]
    assert first["role"] == "system" and "JSON Schema" in first["content"]


@pytest.mark.parametrize(
    ("reply", "error_type"),
    [
        (openai.chat_error(401, "invalid_request_error", "invalid_api_key"), "LLMAuthError"),
        (openai.chat_error(404, "invalid_request_error", "model_not_found"), "LLMInvalidRequest"),
        (openai.context_length_exceeded(), "LLMContextTooLong"),
        (openai.content_filtered(), "LLMContentFiltered"),
    ],
)
async def test_openai_refusals_fail_the_turn_at_once(
    turns: TurnRunner, reply: openai.Reply, error_type: str
) -> None:
    assert turns.openai is not None
    key = new_key()
    turns.openai.script(key, [[reply, openai.text("a retry would have answered")]])

    error, partial = await failure_of(turns, on_openai(key))

    assert error.type == error_type
    assert partial.llm_calls == 0
    assert len(turns.openai.requests_for(key)) == 1


@pytest.mark.parametrize(
    "reply",
    [
        openai.server_error(500),
        openai.server_error(503),
        openai.rate_limited(retry_after=0),
        openai.malformed_arguments("read_file"),
        openai.RawReply(200, b"{cut"),
    ],
    ids=["500", "503", "429", "bad-arguments", "invalid-json"],
)
async def test_openai_transient_failures_are_retried(
    turns: TurnRunner, reply: openai.Reply
) -> None:
    assert turns.openai is not None
    key = new_key()
    turns.openai.script(key, [[reply, openai.text("recovered")]])

    report = await turns.run(on_openai(key))

    assert report.output == "recovered"
    assert len(turns.openai.requests_for(key)) == 2


async def test_a_turn_begun_on_anthropic_finishes_on_openai_with_the_conversation(
    turns: TurnRunner,
) -> None:
    assert turns.openai is not None
    key = new_key()
    turns.fake.script(
        key,
        [
            anthropic.tool_calls(("list_files", {"path": "."}), text="Listing."),
            anthropic.overloaded(),
        ],
    )
    turns.openai.script(key, [openai.text("unused"), openai.text("Finished on OpenAI.")])
    request = scripted_request(key, agent={"fallback_models": [GPT]})

    handle = await turns.start(request)
    report = await handle.result()

    assert report.output == "Finished on OpenAI."
    assert report.models_used == ["anthropic:claude-sonnet-4-6", GPT]
    # Two attempts on the dead primary (agent.fallback_after_attempts), not six.
    assert len(turns.fake.requests_for(key)) == 1 + 2
    [continued] = turns.openai.requests_for(key)
    messages = continued.body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    [call] = messages[2]["tool_calls"]
    assert messages[2]["content"] == "Listing."
    assert call["id"].startswith("toolu_") and messages[3]["tool_call_id"] == call["id"]
    assert call["function"]["name"] == "list_files"
    events = [event async for event in turn_events(turns.client, handle.id)]
    [skipped] = [e for e in events if e.kind == "model_skipped"]
    assert skipped.model == "anthropic:claude-sonnet-4-6"
    assert skipped.reason is not None and "529" in skipped.reason
    assert "2 attempts" in skipped.reason


async def test_a_failed_primary_cools_down_then_is_tried_again(turns: TurnRunner) -> None:
    """Iteration 1 pays the dead primary's two attempts; iteration 2, within the cooldown, goes
    straight to the fallback; iteration 3 comes after the cooldown and tries the primary again."""
    assert turns.openai is not None
    key = new_key()
    turns.fake.script(key, [anthropic.overloaded()] * 3)
    listing = openai.tool_calls(("list_files", {"path": "."}))
    turns.openai.script(key, [listing, SlowReply(listing, 4.0), openai.text("Done.")])
    request = scripted_request(key, agent={"fallback_models": [GPT], "fallback_cooldown_s": 3})

    handle = await turns.start(request)
    report = await handle.result()

    assert report.output == "Done." and report.iterations == 3
    by_step = [r.step for r in turns.fake.requests_for(key)]
    assert by_step == [0, 0, 2, 2], by_step  # step 1 skipped the primary: it was cooling down
    events = [event async for event in turn_events(turns.client, handle.id)]
    reasons = [(e.iteration, e.reason or "") for e in events if e.kind == "model_skipped"]
    assert [iteration for iteration, _ in reasons] == [1, 2, 3]
    assert "cooling down" in reasons[1][1]


async def test_without_cooldown_the_primary_is_paid_for_on_every_iteration(
    turns: TurnRunner,
) -> None:
    assert turns.openai is not None
    key = new_key()
    turns.fake.script(key, [anthropic.overloaded()] * 2)
    turns.openai.script(key, [openai.tool_calls(("list_files", {"path": "."})), openai.text("ok")])
    request = scripted_request(key, agent={"fallback_models": [GPT], "fallback_cooldown_s": 0})

    report = await turns.run(request)

    assert report.output == "ok"
    assert [r.step for r in turns.fake.requests_for(key)] == [0, 0, 1, 1]


async def test_an_auth_refusal_never_falls_back_silently(turns: TurnRunner) -> None:
    assert turns.openai is not None
    key = new_key()
    turns.fake.script(key, [anthropic.error(401, "authentication_error", "bad key")])
    turns.openai.script(key, [openai.text("should not be asked")])

    error, _ = await failure_of(turns, scripted_request(key, agent={"fallback_models": [GPT]}))

    assert error.type == "LLMAuthError"
    assert turns.openai.requests_for(key) == []


async def test_fallback_on_auth_moves_past_a_refused_primary(turns: TurnRunner) -> None:
    assert turns.openai is not None
    key = new_key()
    turns.fake.script(key, [anthropic.error(401, "authentication_error", "bad key")])
    turns.openai.script(key, [openai.text("answered by the fallback")])
    agent = {"fallback_models": [GPT], "fallback_on": ["auth"]}

    handle = await turns.start(scripted_request(key, agent=agent))
    report = await handle.result()

    assert report.output == "answered by the fallback"
    assert len(turns.fake.requests_for(key)) == 1  # a refusal is never retried
    events = [event async for event in turn_events(turns.client, handle.id)]
    [skipped] = [e for e in events if e.kind == "model_skipped"]
    assert skipped.reason is not None and "fallback_on auth" in skipped.reason


async def test_a_refusal_of_the_last_model_fails_with_its_own_type(turns: TurnRunner) -> None:
    assert turns.openai is not None
    key = new_key()
    turns.fake.script(key, [anthropic.error(401, "authentication_error", "bad key")])
    turns.openai.script(key, [openai.chat_error(403, "permission_error", None)])
    agent = {"fallback_models": [GPT], "fallback_on": ["auth"]}

    error, _ = await failure_of(turns, scripted_request(key, agent=agent))

    assert error.type == "LLMAuthError" and "403" in error.message


@pytest.mark.parametrize(
    ("agent", "needle"),
    [
        ({"fallback_on": ["everything"]}, "agent.fallback_on.0"),
        ({"fallback_after_attempts": 0}, "agent.fallback_after_attempts"),
        ({"fallback_cooldown_s": -1}, "agent.fallback_cooldown_s"),
        ({"prompt_cache": "sometimes"}, "agent.prompt_cache"),
        ({"fallback_models": ["Open AI:gpt"]}, "agent.fallback_models"),
    ],
)
async def test_bad_fallback_settings_are_refused(
    turns: TurnRunner, agent: dict[str, Any], needle: str
) -> None:
    key = new_key()
    error, _ = await failure_of(turns, scripted_request(key, agent=agent))

    assert error.type == "InvalidTurnRequest" and needle in error.message


async def test_a_model_of_a_provider_the_worker_lacks_fails_typed(turns: TurnRunner) -> None:
    key = new_key()
    error, _ = await failure_of(turns, scripted_request(key, agent={"model": "local:qwen3-8b"}))

    assert error.type == "LLMInvalidRequest" and "no provider 'local'" in error.message


async def test_the_cooldown_is_carried_across_continue_as_new(
    eager_env: WorkflowEnvironment,
    fake_anthropic: FakeAnthropic,
    fake_openai: FakeOpenAI,
    tmp_path: Path,
) -> None:
    key = new_key()
    iterations = 12
    fake_anthropic.script(key, [anthropic.overloaded()] * (iterations + 1))
    listing = openai.tool_calls(("list_files", {"path": "."}))
    fake_openai.script(key, [listing] * iterations + [openai.text("All done.")])
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    agent = {"fallback_models": [GPT], "max_iterations": iterations + 1}
    workflow_id = f"turn-{uuid.uuid4()}"

    report = await run_on_server(
        eager_env.client,
        settings,
        fake_anthropic,
        scripted_request(key, agent=agent),
        openai_fake=fake_openai,
        workflow_id=workflow_id,
    )

    assert report.output == "All done." and report.iterations == iterations + 1
    assert len(await run_ids(eager_env.client, workflow_id)) > 1
    # Only the first iteration paid the dead primary; every later run knew it was cooling down.
    assert [r.step for r in fake_anthropic.requests_for(key)] == [0, 0]


async def test_a_call_is_priced_by_the_model_that_answered(turns: TurnRunner) -> None:
    assert turns.openai is not None
    key = new_key()
    turns.fake.script(key, [anthropic.overloaded()])
    turns.openai.script(key, [openai.text("cheap answer", cached_tokens=5)])
    request = scripted_request(
        key,
        agent={"fallback_models": [GPT], "price": {"input_per_mtok": 100, "output_per_mtok": 100}},
        task={"constraints": {"cost_budget_usd": 1.0}},
    )

    report = await turns.run(request)

    assert report.models_used == [GPT] and report.usage.cache_read_tokens == 5
    # gpt-4.1's prices from the table; the primary's agent.price does not apply to it.
    assert report.cost_usd == pytest.approx(cost_usd(report.usage, PRICING_TABLE[GPT]))


async def test_unavailable_names_the_models_tried_and_those_passed_over(
    skipping_env: WorkflowEnvironment,
    fake_anthropic: FakeAnthropic,
    fake_openai: FakeOpenAI,
    tmp_path: Path,
) -> None:
    """Iteration 1: the primary fails, the fallback answers. Iteration 2: the primary is cooling
    down and the fallback fails its whole schedule: the turn fails saying both."""
    key = new_key()
    fake_anthropic.script(key, [anthropic.overloaded()] * 2)
    listing = openai.tool_calls(("list_files", {"path": "."}))
    fake_openai.script(key, [listing, openai.server_error(503)])
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    agent = {"fallback_models": [GPT], "fallback_cooldown_s": 3600}

    with pytest.raises(WorkflowFailureError) as failure:
        await run_on_server(
            skipping_env.client,
            settings,
            fake_anthropic,
            scripted_request(key, agent=agent),
            openai_fake=fake_openai,
        )

    error = failure.value.cause
    assert isinstance(error, ApplicationError) and error.type == "LLMUnavailable"
    assert "(1 tried): openai:gpt-4.1" in error.message and "503" in error.message
    assert "passed over: anthropic:claude-sonnet-4-6: cooling down" in error.message
    assert [r.step for r in fake_anthropic.requests_for(key)] == [0, 0]
    assert len(fake_openai.requests_for(key)) == 1 + 6  # the last model: its full schedule
