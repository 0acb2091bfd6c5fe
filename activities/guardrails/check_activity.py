"""The `check_guardrails` activity: runs a turn's guardrails on the texts of one stage, on the
worker that has them.

A verdict is an answer, not a failure: the workflow applies the enforced ones and records all.
A guardrail the worker lacks fails the call with `InvalidTurnRequest` (non-retryable: it would
only repeat), before any guardrail runs.
"""

from __future__ import annotations

from typing import Final

from temporalio import activity
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.guardrails.guardrails import Block, Guardrail, Guardrails, Redact
from turnkeeper.activities.verdicts import clipped, judged_turn_id
from turnkeeper.contracts.errors import INVALID_TURN_REQUEST
from turnkeeper.contracts.guardrail_checks import (
    CheckGuardrailsInput,
    CheckGuardrailsResult,
    GuardedOutcome,
    GuardedText,
)
from turnkeeper.contracts.guardrails import GuardrailDecision, GuardrailRef, GuardrailStage
from turnkeeper.contracts.names import ACTIVITY_CHECK_GUARDRAILS

from turnkeeper.ground.logs import get_logger

log = get_logger(__name__)

# A reason joins the report, the events and (of a blocked tool result) the model's context: long
# enough to explain, short enough that a guardrail quoting the whole text back costs little.
MAX_REASON_CHARS: Final = 1_000


class GuardrailActivities:
    """The `check_guardrails` activity over one worker's guardrails."""

    def __init__(self, guardrails: Guardrails) -> None:
        self._guardrails = guardrails

    @activity.defn(name=ACTIVITY_CHECK_GUARDRAILS)
    async def check_guardrails(self, check: CheckGuardrailsInput) -> CheckGuardrailsResult:
        """Checks the worker has every guardrail named, then runs them on each text in order."""
        chain = [(ref, self._guardrail(ref.name)) for ref in check.guardrails]
        outcomes = [await self._judge(chain, check.stage, text) for text in check.texts]
        return CheckGuardrailsResult(outcomes=outcomes)

    async def _judge(
        self, chain: list[tuple[GuardrailRef, Guardrail]], stage: GuardrailStage, text: GuardedText
    ) -> GuardedOutcome:
        """One text through the chain: an enforced redaction is what the next guardrail reads,
        an enforced block ends the chain; a log-only verdict is recorded and changes nothing."""
        outcome = GuardedOutcome()
        current = text.text
        for ref, guardrail in chain:
            verdict = await guardrail.judge(current, stage, text.tool or None)
            enforced = ref.mode == "enforce"
            decision = GuardrailDecision(
                guardrail=ref.name,
                stage=stage,
                call_id=text.call_id,
                verdict="pass" if verdict is None else _kind(verdict),
                enforced=enforced,
                reason=clipped(verdict.reason, MAX_REASON_CHARS) if verdict is not None else "",
            )
            outcome.decisions.append(decision)
            if verdict is not None:
                # The guardrail and the verdict, never the text: it may be what is kept out.
                log.info(
                    "guardrail_verdict",
                    turn_id=judged_turn_id(),
                    guardrail=ref.name,
                    stage=stage,
                    call_id=text.call_id,
                    verdict=decision.verdict,
                    enforced=enforced,
                )
            if not enforced:
                continue
            if isinstance(verdict, Redact):
                current = outcome.text = verdict.text
            elif isinstance(verdict, Block):
                outcome.blocked_by, outcome.reason = ref.name, decision.reason
                break
        return outcome

    def _guardrail(self, name: str) -> Guardrail:
        guardrail = self._guardrails.get(name)
        if guardrail is None:
            known = ", ".join(self._guardrails.names()) or "none"
            raise ApplicationError(
                f"agent.guardrails: this worker has no guardrail named {name!r} (it has: {known})",
                type=INVALID_TURN_REQUEST,
                non_retryable=True,
            )
        return guardrail


def _kind(verdict: Redact | Block) -> str:
    return "redact" if isinstance(verdict, Redact) else "block"
