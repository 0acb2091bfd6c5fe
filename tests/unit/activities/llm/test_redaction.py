"""Redacting a provider's credentials from the failures of a model call."""

from __future__ import annotations

from turnkeeper.activities.providers.provider import ModelCallError
from turnkeeper.activities.providers.redaction import (
    api_message_excerpt,
    failure_without_secrets,
    redact,
)
from turnkeeper.contracts.errors import LLM_TRANSIENT

KEY = "sk-ant-api03-0123456789abcdefghij"


def test_a_key_is_redacted_wherever_it_occurs() -> None:
    text = f"invalid x-api-key: {KEY}; sent {KEY}."

    assert redact(text, [KEY]) == "invalid x-api-key: [redacted]; sent [redacted]."


def test_the_first_eight_characters_of_a_key_and_more_count_as_the_key() -> None:
    # A gateway that shows only the start of the key, or a cut that ends inside it.
    assert redact(f"key {KEY[:8]}… refused", [KEY]) == "key [redacted]… refused"
    assert redact(f"key {KEY[:20]}", [KEY]) == "key [redacted]"
    assert redact(f"key {KEY[:7]}… refused", [KEY]) == f"key {KEY[:7]}… refused"


def test_a_short_key_is_redacted_whole_only() -> None:
    assert redact("key abc refused; abcdef", ["abcdef"]) == "key abc refused; [redacted]"


def test_no_secret_leaves_the_text_as_it_was() -> None:
    assert redact("invalid x-api-key", []) == "invalid x-api-key"
    assert redact("invalid x-api-key", [""]) == "invalid x-api-key"


def test_a_key_the_cut_would_split_is_redacted_before_the_cut() -> None:
    message = "x" * 285 + " " + KEY

    assert api_message_excerpt(message, [KEY], limit=300) == "x" * 285 + " [redacted]"


def test_the_start_of_a_key_at_the_cut_is_redacted_too() -> None:
    # A gateway that itself quoted only the key's first 30 characters, just before the cut.
    excerpt = api_message_excerpt("x" * 280 + " " + KEY[:30], [KEY], limit=300)

    assert excerpt == "x" * 280 + " [redacted]"


def test_the_failure_keeps_its_classification_and_loses_the_key() -> None:
    error = ModelCallError(
        f"Anthropic returned 529: {KEY}", error_type=LLM_TRANSIENT, retryable=True, retry_after_s=3
    )

    failure = failure_without_secrets(error, [KEY])

    assert str(failure) == "Anthropic returned 529: [redacted]"
    assert (failure.error_type, failure.retryable, failure.retry_after_s) == (
        LLM_TRANSIENT,
        True,
        3,
    )
