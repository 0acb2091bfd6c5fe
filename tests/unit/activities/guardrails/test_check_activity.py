"""The `check_guardrails` activity: enforced redactions feed the next guardrail, an enforced
block ends the chain, log-only verdicts change nothing, and a guardrail the worker lacks is a
typed, non-retryable failure before any guardrail runs."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.guardrails.check_activity import MAX_REASON_CHARS, GuardrailActivities
from turnkeeper.activities.guardrails.guardrails import Block, Guardrails, Redact, guardrail
from turnkeeper.contracts.guardrail_checks import CheckGuardrailsInput, GuardedText
from turnkeeper.contracts.guardrails import GuardrailRef

seen: list[tuple[str, str]] = []


@guardrail
def upper(text: str) -> Redact:
    seen.append(("upper", text))
    return Redact(text.upper(), "shouted")


@guardrail
def stop(text: str) -> Block | None:
    seen.append(("stop", text))
    return Block("x" * (MAX_REASON_CHARS + 5)) if "STOP" in text else None


@guardrail
def last(text: str) -> None:
    seen.append(("last", text))


ACTIVITIES = GuardrailActivities(Guardrails([upper, stop, last]))


async def check(refs: list[GuardrailRef], *texts: str) -> list:
    seen.clear()
    check = CheckGuardrailsInput(
        guardrails=refs,
        stage="tool_result",
        texts=[GuardedText(call_id="c1", text=t) for t in texts],
    )
    result = await ActivityEnvironment().run(ACTIVITIES.check_guardrails, check)
    return result.outcomes


async def test_an_enforced_chain_redacts_then_blocks_and_stops() -> None:
    refs = [GuardrailRef(name=n) for n in ("upper", "stop", "last")]

    [outcome] = await check(refs, "please stop")

    assert seen == [("upper", "please stop"), ("stop", "PLEASE STOP")]
    assert outcome.blocked_by == "stop" and len(outcome.reason) == MAX_REASON_CHARS
    assert [(d.guardrail, d.verdict, d.enforced, d.call_id) for d in outcome.decisions] == [
        ("upper", "redact", True, "c1"),
        ("stop", "block", True, "c1"),
    ]


async def test_log_only_verdicts_are_recorded_and_change_nothing() -> None:
    refs = [GuardrailRef(name=n, mode="log_only") for n in ("upper", "stop")]
    refs.append(GuardrailRef(name="last"))

    outcomes = await check(refs, "STOP now", "go on")

    assert [o.blocked_by for o in outcomes] == [None, None]
    assert [o.text for o in outcomes] == [None, None]
    assert ("last", "STOP now") in seen and ("stop", "STOP now") in seen
    assert [d.verdict for d in outcomes[0].decisions] == ["redact", "block", "pass"]
    assert {d.enforced for d in outcomes[0].decisions[:2]} == {False}


async def test_a_guardrail_the_worker_lacks_fails_before_any_runs() -> None:
    refs = [GuardrailRef(name="upper"), GuardrailRef(name="no_pii")]

    with pytest.raises(ApplicationError) as failure:
        await check(refs, "text")

    assert failure.value.type == "InvalidTurnRequest" and failure.value.non_retryable
    assert "no guardrail named 'no_pii' (it has: last, stop, upper)" in failure.value.message
    assert seen == []
