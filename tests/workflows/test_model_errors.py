"""The provider error ladder through the whole stack: the fake Messages API answers with an
error, the real SDK raises, the activity classifies, Temporal retries (or not), the workflow
fails with the contract's type, message and partial report."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path

import pytest
from temporalio.api.common.v1 import RetryPolicy
from temporalio.api.history.v1 import ActivityTaskStartedEventAttributes
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.testing import WorkflowEnvironment
from turnkeeper.contracts.names import ACTIVITY_MODEL_CALL, QUERY_STATUS
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import (
    TurnRunner,
    failure_of,
    make_settings,
    new_key,
    run_on_server,
    scripted_request,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic, ReplySpec
from tests.support import history_facts


@pytest.mark.parametrize(
    ("reply", "error_type", "needle"),
    [
        (fake.error(400, "invalid_request_error", "bad field"), "LLMInvalidRequest", "400"),
        (fake.error(401, "authentication_error", "bad key"), "LLMAuthError", "401"),
        (fake.error(403, "permission_error", "forbidden"), "LLMAuthError", "403"),
        (fake.error(404, "not_found_error", "no such model"), "LLMInvalidRequest", "404"),
        (fake.error(413, "request_too_large", "too big"), "LLMContextTooLong", "413"),
        (fake.refusal(), "LLMContentFiltered", "refus"),
        (fake.context_window_exceeded(), "LLMContextTooLong", "context"),
    ],
)
async def test_refusals_fail_at_once_and_are_never_retried(
    turns: TurnRunner, reply: ReplySpec, error_type: str, needle: str
) -> None:
    key = new_key()
    turns.fake.script(key, [[reply, fake.text("a retry would have succeeded")]])

    error, partial = await failure_of(turns, scripted_request(key))

    assert error.type == error_type
    assert needle in error.message
    assert not error.message.startswith(error_type)  # one sentence, not "Type: Type: ..."
    assert (partial.outcome, partial.llm_calls, len(partial.messages)) == ("failed", 0, 1)
    assert len(turns.fake.requests_for(key)) == 1


@pytest.mark.parametrize(
    "reply",
    [
        fake.server_error(500),
        fake.server_error(502),
        fake.server_error(503),
        fake.server_error(504),
        fake.overloaded(),
        fake.invalid_json(),
    ],
    ids=["500", "502", "503", "504", "529", "invalid-json-200"],
)
async def test_transient_errors_are_retried(turns: TurnRunner, reply: ReplySpec) -> None:
    key = new_key()
    turns.fake.script(key, [[reply, fake.text("recovered")]])

    report = await turns.run(scripted_request(key))

    assert report.output == "recovered"
    assert report.llm_calls == 1  # the failed attempt is not counted, nor billed in the report
    assert len(turns.fake.requests_for(key)) == 2


async def retried_attempt(handle: WorkflowHandle) -> ActivityTaskStartedEventAttributes:
    """The start of the turn's one retried activity (the model call), read from history: its
    attempt number and the failure the server scheduled that attempt after."""
    [retried] = [start for start in await history_facts.started(handle) if start.attempt > 1]
    return retried


async def model_call_retry_policy(handle: WorkflowHandle) -> RetryPolicy:
    [call] = await history_facts.scheduled(handle, ACTIVITY_MODEL_CALL)
    return call.retry_policy


async def test_rate_limit_waits_as_long_as_retry_after_says(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [[fake.rate_limited(retry_after=1), fake.text("recovered")]])
    handle = await turns.start(scripted_request(key))

    report = await handle.result()

    assert report.output == "recovered"
    assert len(turns.fake.requests_for(key)) == 2
    # retry-after (1 s) replaced the policy's first interval (2 s): the server was told so.
    retried = await retried_attempt(handle)
    assert retried.attempt == 2
    assert retried.last_failure.application_failure_info.next_retry_delay.ToSeconds() == 1
    assert (await model_call_retry_policy(handle)).initial_interval.ToSeconds() == 2


async def test_overloaded_burst_follows_the_backoff_schedule(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key, [[fake.overloaded(), fake.overloaded(), fake.overloaded(), fake.text("recovered")]]
    )

    handle = await turns.start(scripted_request(key))

    report = await handle.result()

    assert report.output == "recovered"
    times = [r.received_at for r in turns.fake.requests_for(key)]
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    print("529 burst, seconds between attempts:", [round(gap, 2) for gap in gaps])
    # 2 s, then 4 s, then 8 s: the policy's schedule (initial interval 2 s, coefficient 2), which
    # no answer overrode with a delay of its own.
    policy = await model_call_retry_policy(handle)
    assert (policy.initial_interval.ToSeconds(), policy.backoff_coefficient) == (2, 2)
    retried = await retried_attempt(handle)
    assert retried.attempt == 4
    assert not retried.last_failure.application_failure_info.HasField("next_retry_delay")


async def test_cancellation_wins_over_a_model_call_in_flight(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.slow(fake.text("too late"), 30)])
    handle = await turns.start(scripted_request(key))
    await turns.fake.wait_for_requests(key)

    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()

    assert isinstance(failure.value.cause, CancelledError)
    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert status.state == "cancelled"


async def _run_on_skipping_server(
    env: WorkflowEnvironment, fake_api: FakeAnthropic, tmp_path: Path, request: dict
) -> AgentReport:
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    return await run_on_server(env.client, settings, fake_api, request)


async def test_exhausted_retries_fail_with_llm_unavailable(
    skipping_env: WorkflowEnvironment, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(key, [[fake.overloaded()]])

    with pytest.raises(WorkflowFailureError) as failure:
        await _run_on_skipping_server(skipping_env, fake_anthropic, tmp_path, scripted_request(key))

    error = failure.value.cause
    assert isinstance(error, ApplicationError)
    assert error.type == "LLMUnavailable"
    assert "anthropic:claude-sonnet-4-6" in error.message and "529" in error.message
    assert AgentReport.model_validate(error.details[0]).llm_calls == 0
    assert len(fake_anthropic.requests_for(key)) == 6  # the documented maximum_attempts


async def test_fallback_model_answers_when_the_first_is_exhausted(
    skipping_env: WorkflowEnvironment, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()

    def by_model(body: dict) -> ReplySpec:
        if body["model"] == "claude-sonnet-4-6":
            return fake.overloaded()
        return fake.text(f"answered by {body['model']}")

    fake_anthropic.script(key, [by_model])
    request = scripted_request(key, agent={"fallback_models": ["anthropic:claude-haiku-4-5"]})

    report = await _run_on_skipping_server(skipping_env, fake_anthropic, tmp_path, request)

    assert report.output == "answered by claude-haiku-4-5"
    assert report.models_used == ["anthropic:claude-haiku-4-5"]
    # With a fallback behind it, the first model gets agent.fallback_after_attempts (2).
    assert len(fake_anthropic.requests_for(key)) == 3


async def test_an_answer_too_large_for_temporal_fails_once_instead_of_retrying(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("x" * 2_100_000)])

    error, partial = await failure_of(turns, scripted_request(key))

    assert error.type == "LLMInvalidRequest"
    assert "payload limit" in error.message and "max_tokens" in error.message
    assert partial.llm_calls == 0
    assert len(turns.fake.requests_for(key)) == 1  # never billed twice


@pytest.mark.parametrize("reply", [fake.stream_cut(), fake.broken_body()], ids=["cut", "broken"])
async def test_a_streamed_answer_cut_mid_body_or_a_broken_200_is_retried(
    turns: TurnRunner, reply: ReplySpec
) -> None:
    key = new_key()
    turns.fake.script(key, [[reply, fake.text("recovered")]])

    report = await turns.run(scripted_request(key, agent={"stream": True}))

    assert report.output == "recovered"
    assert report.llm_calls == 1
    assert len(turns.fake.requests_for(key)) == 2
    assert len(turns.fake.billed_for(key)) == 1  # the cut answer was never billed in full
