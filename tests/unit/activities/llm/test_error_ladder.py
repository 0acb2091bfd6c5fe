"""The provider half of the error ladder, without HTTP: each status and error type a provider
answers with becomes one contract error type, retryable or not, with the provider's own delay.
The same answers through the real SDKs and the fake servers:
tests/unit/activities/providers/test_anthropic_provider.py and
tests/activities/test_openai_provider.py."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import openai
import pytest
from turnkeeper.activities.providers.anthropic_provider import classify_error
from turnkeeper.activities.providers.openai_provider import OpenAICompatibleProvider
from turnkeeper.activities.providers.provider import ModelCallError
from turnkeeper.contracts.errors import (
    LLM_AUTH_ERROR,
    LLM_CONTENT_FILTERED,
    LLM_CONTEXT_TOO_LONG,
    LLM_INVALID_REQUEST,
    LLM_TRANSIENT,
)

RETRYABLE = {LLM_TRANSIENT}


def anthropic_error(status: int, error_type: str | None, **headers: str) -> ModelCallError:
    request = httpx2.Request("POST", "https://api.example/v1/messages")
    body: dict[str, Any] = {"type": "error", "error": {"type": error_type, "message": "said so"}}
    response = httpx2.Response(status, request=request, headers=headers, json=body)
    return classify_error(
        anthropic.APIStatusError("x", response=response, body=body), model="claude-x"
    )


def openai_error(status: int, code: str | None, **headers: str) -> ModelCallError:
    request = httpx2.Request("POST", "https://api.example/v1/chat/completions")
    body: dict[str, Any] = {"code": code, "type": None, "message": "said so"}
    response = httpx2.Response(status, request=request, headers=headers, json={"error": body})
    provider = OpenAICompatibleProvider(api_key="k", base_url="http://127.0.0.1:9")
    return provider._classify(openai.APIStatusError("x", response=response, body=body), "gpt-x")


@pytest.mark.parametrize(
    ("status", "error_type", "expected"),
    [
        (400, "invalid_request_error", LLM_INVALID_REQUEST),
        (401, "authentication_error", LLM_AUTH_ERROR),
        (403, "permission_error", LLM_AUTH_ERROR),
        (404, "not_found_error", LLM_INVALID_REQUEST),
        (408, "timeout_error", LLM_TRANSIENT),
        (409, None, LLM_INVALID_REQUEST),
        (413, "request_too_large", LLM_CONTEXT_TOO_LONG),
        (422, "overloaded_error", LLM_TRANSIENT),  # an unlisted 4xx: its error type decides
        (422, "permission_error", LLM_AUTH_ERROR),
        (422, "request_too_large", LLM_CONTEXT_TOO_LONG),
        (429, "rate_limit_error", LLM_TRANSIENT),
        (500, "api_error", LLM_TRANSIENT),
        (529, "overloaded_error", LLM_TRANSIENT),
    ],
)
def test_anthropic_statuses_climb_the_ladder(
    status: int, error_type: str | None, expected: str
) -> None:
    error = anthropic_error(status, error_type)
    assert (error.error_type, error.retryable) == (expected, expected in RETRYABLE)
    assert error.retry_after_s is None
    assert f"Anthropic returned {status}" in str(error) and "'claude-x'" in str(error)
    assert "said so" in str(error)  # the API's own words are shown, never branched on


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (400, "context_length_exceeded", LLM_CONTEXT_TOO_LONG),
        (400, "content_filter", LLM_CONTENT_FILTERED),
        (400, "invalid_value", LLM_INVALID_REQUEST),
        (401, "invalid_api_key", LLM_AUTH_ERROR),
        (403, None, LLM_AUTH_ERROR),
        (409, None, LLM_TRANSIENT),
        (413, None, LLM_CONTEXT_TOO_LONG),
        (429, "rate_limit_exceeded", LLM_TRANSIENT),
        (429, "insufficient_quota", LLM_AUTH_ERROR),  # waiting will not pay the bill
        (503, None, LLM_TRANSIENT),
    ],
)
def test_openai_statuses_climb_the_ladder(status: int, code: str | None, expected: str) -> None:
    error = openai_error(status, code)
    assert (error.error_type, error.retryable) == (expected, expected in RETRYABLE)
    assert f"openai returned {status}" in str(error) and "'gpt-x'" in str(error)


def test_only_the_auth_errors_name_the_key_to_check() -> None:
    assert "check ANTHROPIC_API_KEY" in str(anthropic_error(401, "authentication_error"))
    assert "check OPENAI_API_KEY" in str(openai_error(401, "invalid_api_key"))
    assert "check" not in str(anthropic_error(400, "invalid_request_error"))
    assert "check" not in str(openai_error(400, "invalid_value"))


@pytest.mark.parametrize(
    ("headers", "delay_s"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "soon"}, None),  # unusable: the retry policy's own interval applies
        ({}, None),
    ],
)
def test_a_provider_s_delay_rides_on_the_transient_error(
    headers: dict[str, str], delay_s: float | None
) -> None:
    assert anthropic_error(429, "rate_limit_error", **headers).retry_after_s == delay_s
    assert openai_error(429, "rate_limit_exceeded", **headers).retry_after_s == delay_s


def test_openai_s_millisecond_delay_wins_over_the_seconds() -> None:
    error = openai_error(429, None, **{"retry-after-ms": "1500", "retry-after": "9"})
    assert error.retry_after_s == 1.5
