"""What a provider's or a gateway's failure says beyond its status and error type.

The APIs type most failures (HTTP status, `error.type`, `error.code`) and the providers classify
by those. A few facts have no type and are read here, in one place, so that a provider or a
gateway rewording one is fixed once:

- a prompt over the context window: Anthropic answers a plain 400 `invalid_request_error` whose
  message reads "prompt is too long: N tokens > M maximum"; LiteLLM relays any provider's
  overflow as a 400 whose message names its exception class `ContextWindowExceededError`;
- the retry hint: OpenAI sends `retry-after-ms`, everyone `retry-after`, and LiteLLM forwards
  the upstream's headers renamed with an `llm_provider-` prefix (its own `retry-after` is absent);
- an upstream overload (Anthropic's 529) that a gateway relays as a 500.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Final

from turnkeeper.activities.providers.provider import ModelCallError, parse_retry_after, transient
from turnkeeper.activities.providers.rate_headers import rate_limited_for

# Lower-case fragments of the documented wordings. Each names its source, so a stale one can be
# found and dropped when the source changes it.
_CONTEXT_OVERFLOW_WORDINGS: Final = (
    "prompt is too long",  # Anthropic Messages API (400 invalid_request_error)
    "contextwindowexceedederror",  # LiteLLM, any upstream (its exception class in the message)
    "maximum context length",  # OpenAI and vLLM ("This model's maximum context length is …")
    "context_length_exceeded",  # OpenAI's error code, when a gateway folds it into the message
)
_OVERLOAD_WORDINGS: Final = ("overloaded_error", "overloaded")

# Most specific first: milliseconds beat seconds, and a hint of ours beats a relayed one.
_RETRY_HINT_HEADERS: Final = (
    ("retry-after-ms", 1000.0),
    ("retry-after", 1.0),
    ("llm_provider-retry-after-ms", 1000.0),
    ("llm_provider-retry-after", 1.0),
)


def says_context_overflow(message: str | None) -> bool:
    """Whether an error message is a provider's or a gateway's word for a prompt over the
    model's context window."""
    text = (message or "").lower()
    return any(wording in text for wording in _CONTEXT_OVERFLOW_WORDINGS)


def says_upstream_overloaded(message: str | None) -> bool:
    """Whether a server error's message relays an upstream model's overload (a 529)."""
    text = (message or "").lower()
    return any(wording in text for wording in _OVERLOAD_WORDINGS)


def retry_hint_s(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait before the next attempt, from the first retry header that parses."""
    for header, per_second in _RETRY_HINT_HEADERS:
        seconds = parse_retry_after(headers.get(header))
        if seconds is not None:
            return seconds / per_second
    return None


def status_words(status: int, *names: str | None, missing: str = "with no error code") -> str:
    """`429 rate_limit_exceeded`: the status and the first error name that adds something.
    Gateways often put the status itself in `error.code` ("401"), which would read "401 401"."""
    for name in names:
        if name and name != str(status):
            return f"{status} {name}"
    return f"{status} {missing}"


def transient_status_error(
    what: str, status: int, headers: Mapping[str, str], message: str | None
) -> ModelCallError:
    """The retryable failure of a transient status (429, 5xx), as every provider words it:
    `what` with a relayed 529 named, the retry hint of the headers, and on a 429 how long the
    whole key is spent (`rate_limited_s`, which backs the fleet off)."""
    if status >= 500 and status != 529 and says_upstream_overloaded(message):
        what += " (the upstream model is overloaded: its 529, relayed)"
    retry_after = retry_hint_s(headers)
    if retry_after is not None:
        err = transient(f"{what}; retry after {retry_after:g} s.", retry_after)
    else:
        err = transient(f"{what}.")
    if status == 429:
        err.rate_limited_s = rate_limited_for(headers, time.time())
    return err
