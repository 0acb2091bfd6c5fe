"""Keeping a provider's credentials out of the failures a model call raises.

A provider, gateway or proxy may echo the key it was sent in an error body ("invalid x-api-key:
sk-…"). What a failed call raises travels far: the worker's log (plaintext even with payload
encryption on), the spans (`exception.stacktrace`) and the turn's failure chain in history. So
every provider builds its failure through `failure_without_secrets`: the message is redacted,
and nothing of the SDK's exception (whose text is the raw body) rides along as its cause or
context.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from turnkeeper.activities.providers.provider import ModelCallError

REDACTED: Final = "[redacted]"
# The shortest run of a key's first characters that counts as the key: a cut message can end in
# the first part of a key, and a prefix that long narrows a search for the rest. Shorter ones
# (`sk-ant-`) name only the vendor.
SHORTEST_SECRET_PREFIX: Final = 8


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret, and every run of a secret's first characters at least
    `SHORTEST_SECRET_PREFIX` long (a key cut short), replaced by `[redacted]`."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = _redact_one(text, secret)
    return text


def _redact_one(text: str, secret: str) -> str:
    shortest = min(SHORTEST_SECRET_PREFIX, len(secret))
    start = text.find(secret[:shortest])
    while start != -1:
        end = start + shortest
        while end - start < len(secret) and end < len(text) and text[end] == secret[end - start]:
            end += 1
        text = text[:start] + REDACTED + text[end:]
        start = text.find(secret[:shortest], start + len(REDACTED))
    return text


def api_message_excerpt(text: str, secrets: Iterable[str], limit: int) -> str:
    """The API's own message on one line, at most `limit` characters, without secrets.

    Redacted before the cut, so that a key the cut would split is replaced whole; what remains
    holds no 8-character run of a key's start, so no cut can leave one at the end."""
    flat = redact(" ".join(text.split()), secrets)
    return flat if len(flat) <= limit else f"{flat[: limit - 1]}…"


def failure_without_secrets(error: ModelCallError, secrets: Iterable[str]) -> ModelCallError:
    """A fresh `ModelCallError` like `error`, its message redacted.

    Raise it after the `except` block that caught the SDK's exception, not inside it: raised
    there, even `from None`, it would keep that exception as `__context__`, which quotes the raw
    body, key included, and which not every reader of a chain skips."""
    return ModelCallError(
        redact(str(error), secrets),
        error_type=error.error_type,
        retryable=error.retryable,
        retry_after_s=error.retry_after_s,
        rate_limited_s=error.rate_limited_s,
        status=error.status,
    )
