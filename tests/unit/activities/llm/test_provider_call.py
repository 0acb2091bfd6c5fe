"""The provider call: which provider serves a model, and how its classified failures reach
Temporal's retry policy."""

from __future__ import annotations

from datetime import timedelta

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.llm.provider_call import call_provider, classified, provider_for
from turnkeeper.activities.providers.demo_provider import DemoProvider
from turnkeeper.activities.providers.provider import ModelCallError, ModelRequest, transient
from turnkeeper.contracts.errors import LLM_INVALID_REQUEST, LLM_TRANSIENT
from turnkeeper.contracts.messages import Message, TextBlock

from tests.unit.activities.llm.steps import DEMO, call

DEMO_PROVIDER = DemoProvider()


def request(model: str = "workspace-summarizer") -> ModelRequest:
    return ModelRequest(
        model=model, messages=[Message(role="user", content=[TextBlock(text="Hi")])], max_tokens=64
    )


def test_the_model_s_provider_serves_it_under_its_own_name() -> None:
    provider, model_name = provider_for({"demo": DEMO_PROVIDER}, DEMO)

    assert provider is DEMO_PROVIDER
    assert model_name == "workspace-summarizer"


def test_a_model_of_a_provider_this_worker_lacks_is_refused_at_once() -> None:
    with pytest.raises(ApplicationError) as refused:
        provider_for({"demo": DEMO_PROVIDER}, "openai:gpt-5")

    assert refused.value.type == LLM_INVALID_REQUEST
    assert refused.value.non_retryable
    assert refused.value.message == "this worker has no provider 'openai' for model 'openai:gpt-5'"


async def fails(error: Exception) -> None:
    raise error


async def test_a_transient_failure_is_retried_after_the_provider_s_hint() -> None:
    with pytest.raises(ApplicationError) as failed:
        await classified(fails(transient("overloaded (529)", retry_after_s=7.0)))

    assert failed.value.type == LLM_TRANSIENT
    assert not failed.value.non_retryable
    assert failed.value.next_retry_delay == timedelta(seconds=7)
    assert failed.value.message == "overloaded (529)"


async def test_a_transient_failure_without_a_hint_leaves_the_delay_to_the_policy() -> None:
    with pytest.raises(ApplicationError) as failed:
        await classified(fails(transient("connection reset")))

    assert failed.value.next_retry_delay is None


async def test_a_refusal_is_never_retried() -> None:
    refusal = ModelCallError("bad key", error_type="LLMAuthError", retryable=False)

    with pytest.raises(ApplicationError) as failed:
        await classified(fails(refusal))

    assert failed.value.type == "LLMAuthError"
    assert failed.value.non_retryable


async def test_what_a_provider_chained_to_its_failure_goes_no_further() -> None:
    # An SDK error quoting the raw body (a key echoed in a 401) would reach the log, the spans
    # and the turn's failure chain in history.
    async def chained() -> None:
        try:
            raise RuntimeError("Error code: 401 - invalid x-api-key: sk-ant-api03-secret")
        except RuntimeError as sdk_error:
            raise transient("Anthropic returned 401") from sdk_error

    with pytest.raises(ApplicationError) as failed:
        await classified(chained())

    assert (failed.value.__cause__, failed.value.__context__) == (None, None)
    assert failed.value.message == "Anthropic returned 401"


async def test_what_is_not_a_classified_failure_passes_through_unchanged() -> None:
    with pytest.raises(KeyError):
        await classified(fails(KeyError("ours")))


async def test_one_attempt_returns_the_provider_s_answer() -> None:
    response = await ActivityEnvironment().run(
        call_provider, DEMO_PROVIDER, request(), call(stream_text=False)
    )

    assert response.stop_reason == "end_turn"
    assert response.content[0].text.startswith("[offline demo model]")  # type: ignore[union-attr]


async def test_a_provider_s_refusal_in_the_attempt_is_typed_for_the_retry_policy() -> None:
    with pytest.raises(ApplicationError) as failed:
        await ActivityEnvironment().run(call_provider, DEMO_PROVIDER, request("other"), call())

    assert failed.value.type == LLM_INVALID_REQUEST
    assert failed.value.non_retryable
