"""The built-in guardrails: `secrets` redacts the worker's own secret values and the shapes of
well-known keys, and leaves prose alone; `size_cap` blocks what is over its limit."""

from __future__ import annotations

import pytest
from turnkeeper.activities.guardrails.builtin import (
    builtin_guardrails,
    secret_free,
    secrets_guardrail,
    size_cap_guardrail,
)
from turnkeeper.activities.guardrails.guardrails import Block, Redact

# Built at run time, so that no scanner takes the test's strings for leaked keys.
SHAPED = {
    "anthropic": "sk-ant-" + "api03-" + "a" * 30,
    "openai": "sk-proj-" + "B" * 30,
    "aws": "AKIA" + "7" * 16,
    "github": "ghp_" + "c" * 36,
    "slack": "xoxb-" + "1234567890-abcdef",
    "google": "AIza" + "d" * 35,
    "bearer": "Bearer " + "e" * 24,
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
}


@pytest.mark.parametrize("kind", sorted(SHAPED))
def test_secret_shapes_are_redacted(kind: str) -> None:
    scrubbed, found = secret_free(f"the value is {SHAPED[kind]}, keep it", [])

    assert SHAPED[kind] not in scrubbed
    assert scrubbed.startswith("the value is [redacted]")
    assert found == 1


def test_known_values_are_redacted_even_cut_short() -> None:
    known = "worker-own-credential-123456"

    scrubbed, found = secret_free(f"a {known} and a cut {known[:10]}", [known])

    assert scrubbed == "a [redacted] and a cut [redacted]"
    assert found == 2


@pytest.mark.parametrize(
    "prose",
    [
        "The task-list is sk-eleven items long.",
        "Ask Bearer of the news.",
        "AKIA is not a key without its sixteen characters.",
        "already [redacted] once",
    ],
)
def test_prose_passes(prose: str) -> None:
    assert secret_free(prose, ["unrelated-secret-value"]) == (prose, 0)


async def test_the_secrets_guardrail_reads_the_worker_secrets_at_each_check() -> None:
    values: list[str] = []
    guardrail = secrets_guardrail(lambda: values)
    text = "token rotating-value-0001 here"

    assert await guardrail.judge(text, "tool_result", "read_file") is None
    values.append("rotating-value-0001")
    verdict = await guardrail.judge(text, "tool_result", "read_file")

    assert verdict == Redact("token [redacted] here", "1 secret-like string replaced by [redacted]")


async def test_the_secrets_guardrail_finds_environment_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PAYMENTS_API_TOKEN", "pay-0123456789")
    monkeypatch.setenv("PAYMENTS_RETRIES", "123456789")  # not named like a credential

    verdict = await secrets_guardrail().judge("pay-0123456789 123456789", "answer", None)

    assert isinstance(verdict, Redact) and verdict.text == "[redacted] 123456789"


async def test_size_cap_blocks_only_past_its_limit() -> None:
    cap = size_cap_guardrail(10)

    assert await cap.judge("x" * 10, "input", None) is None
    assert await cap.judge("x" * 11, "input", None) == Block(
        "11 characters, over the size cap of 10"
    )


def test_every_worker_has_both() -> None:
    assert [g.name for g in builtin_guardrails()] == ["secrets", "size_cap"]
