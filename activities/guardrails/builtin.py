"""The two guardrails every worker has: `secrets` and `size_cap`.

`secrets` redacts secret-like strings: the values the cassette recorder already scrubs (the
worker's environment variables named like credentials, and every rotating credential it read),
through the same `redact` the providers use on their failures, and the shapes of well-known API
keys and private keys, which a tool may read from a file the worker never loaded.
`size_cap` blocks a text longer than `TURNKEEPER_GUARDRAIL_MAX_CHARS` characters.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Final

from turnkeeper.activities.credentials import secrets_in_use
from turnkeeper.activities.guardrails.guardrails import Block, Guardrail, Redact, Verdict
from turnkeeper.activities.providers.cassette_provider import environment_secrets
from turnkeeper.activities.providers.redaction import REDACTED, redact
from turnkeeper.contracts.guardrails import (
    DEFAULT_GUARDRAIL_MAX_CHARS,
    SECRETS_GUARDRAIL,
    SIZE_CAP_GUARDRAIL,
)

# Key formats whose prefix says what they are; long enough that prose never matches.
SECRET_SHAPES: Final = re.compile(
    "|".join(
        (
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
            r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}",  # Anthropic, OpenAI
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids
            r"\bgh[pousr]_[A-Za-z0-9]{36,}",  # GitHub tokens
            r"\bgithub_pat_[A-Za-z0-9_]{22,}",
            r"\bxox[abprs]-[A-Za-z0-9-]{10,}",  # Slack tokens
            r"\bAIza[0-9A-Za-z_-]{35}",  # Google API keys
            r"\b[Bb]earer\s+[A-Za-z0-9._~+/-]{20,}=*",
        )
    )
)


def secret_free(text: str, known: list[str]) -> tuple[str, int]:
    """`text` with the `known` secret values and the secret-like shapes replaced by
    `[redacted]`; how many were replaced."""
    scrubbed = redact(text, known)
    known_found = scrubbed.count(REDACTED) - text.count(REDACTED)
    scrubbed, shapes = SECRET_SHAPES.subn(REDACTED, scrubbed)
    return scrubbed, known_found + shapes


def secrets_guardrail(known: Callable[[], list[str]] | None = None) -> Guardrail:
    """The built-in `secrets` guardrail; `known` gives the secret values to look for (default:
    the worker's, read at each check, since rotating credentials change)."""

    def worker_secrets() -> list[str]:
        return [*environment_secrets(os.environ), *secrets_in_use()]

    values = known or worker_secrets

    async def secrets(text: str) -> Verdict:
        scrubbed, found = secret_free(text, values())
        if not found:
            return None
        noun = "string" if found == 1 else "strings"
        return Redact(scrubbed, f"{found} secret-like {noun} replaced by {REDACTED}")

    return Guardrail(name=SECRETS_GUARDRAIL, function=secrets)


def size_cap_guardrail(max_chars: int = DEFAULT_GUARDRAIL_MAX_CHARS) -> Guardrail:
    """The built-in `size_cap` guardrail: blocks a text longer than `max_chars` characters."""

    async def size_cap(text: str) -> Verdict:
        if len(text) <= max_chars:
            return None
        return Block(f"{len(text)} characters, over the size cap of {max_chars}")

    return Guardrail(name=SIZE_CAP_GUARDRAIL, function=size_cap)


def builtin_guardrails(max_chars: int = DEFAULT_GUARDRAIL_MAX_CHARS) -> list[Guardrail]:
    """The guardrails every worker has."""
    return [secrets_guardrail(), size_cap_guardrail(max_chars)]
