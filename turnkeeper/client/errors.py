"""A failed turn as a Python exception: one class per error type of the contract, named like it,
each carrying the partial report (`details[0]` of the workflow's failure).

    try:
        report = await handle.result()
    except turnkeeper.TurnBudgetExceeded as failure:
        print(failure, failure.report.cost_usd)
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from pydantic import ValidationError
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError, CancelledError, TerminatedError

from turnkeeper.contracts import errors
from turnkeeper.contracts.turn import AgentReport


class TurnError(Exception):
    """A turn that did not complete. `type` is the contract's error type; `report` what the turn
    had done (transcript, usage, cost, counters) when it failed, if it got that far."""

    type: ClassVar[str] = "TurnError"

    def __init__(self, message: str, report: AgentReport | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.report = report


class InvalidTurnRequest(TurnError):
    type = errors.INVALID_TURN_REQUEST


class EncryptionRequired(TurnError):
    """The request reached a worker that requires encryption unencrypted: this client has no
    `TURNKEEPER_ENCRYPTION_KEYS` (the message says how to send it encrypted)."""

    type = errors.ENCRYPTION_REQUIRED


class TurnBudgetExceeded(TurnError):
    type = errors.TURN_BUDGET_EXCEEDED


class MaxIterationsExceeded(TurnError):
    type = errors.MAX_ITERATIONS_EXCEEDED


class AutonomyBoundaryViolation(TurnError):
    type = errors.AUTONOMY_BOUNDARY_VIOLATION


class ToolArgumentsInvalid(TurnError):
    type = errors.TOOL_ARGUMENTS_INVALID


class OutputValidatorError(TurnError):
    """An output validator raised something other than `OutputRejected`, or never answered:
    a defect of the application's validator, not of the model's answer."""

    type = errors.OUTPUT_VALIDATOR_ERROR


class GuardrailBlocked(TurnError):
    """An enforced guardrail (`agent.guardrails`) blocked the task input, before any model call,
    or the final answer; the message names the guardrail and its reason, and the report
    (`details`) holds every guardrail verdict."""

    type = errors.GUARDRAIL_BLOCKED


class TurnInternalError(TurnError):
    type = errors.TURN_INTERNAL_ERROR


class LLMAuthError(TurnError):
    type = errors.LLM_AUTH_ERROR


class LLMInvalidRequest(TurnError):
    type = errors.LLM_INVALID_REQUEST


class LLMContextTooLong(TurnError):
    type = errors.LLM_CONTEXT_TOO_LONG


class LLMContentFiltered(TurnError):
    type = errors.LLM_CONTENT_FILTERED


class LLMUnavailable(TurnError):
    type = errors.LLM_UNAVAILABLE


class CassetteMiss(TurnError):
    """A worker replaying a cassette had no recorded answer for one of the turn's model calls."""

    type = errors.CASSETTE_MISS


class RuntimeIdTaken(TurnError):
    """A workflow id the runtime keeps for its own workflow (an agent's standing approvals, a
    tenant's or a model's ledger) is held by a running workflow of another type; the message
    names it and says to terminate it."""

    type = errors.RUNTIME_ID_TAKEN


class TurnCancelled(TurnError):
    """The turn was cancelled (or terminated); its partial report stays readable by query."""

    type = "TurnCancelled"


class TurnUnavailable(Exception):
    """A turn operation found no turn to act on: the id is taken by a running turn, no turn has
    it, no worker answered its query, or nothing of that kind is pending (the message says which
    and what to do)."""


class DecisionRefused(Exception):
    """The turn refused a decision (`approve`, `reject`): an unknown or settled call, an approver
    it does not accept, an edit that does not fit, a signature that does not verify."""


class UnsignableDecision(DecisionRefused):
    """A decision that cannot be signed, refused before anything is sent: the call's input holds
    a value canonical JSON cannot express (the console says so in its own words, not as the
    turn's refusal)."""


class InvalidSessionRequest(Exception):
    """A session's start input does not validate (the message names the field)."""

    type: ClassVar[str] = errors.INVALID_SESSION_REQUEST


class SessionRefused(Exception):
    """The session refused a `send` or `close`: a turn is still running, the cost budget is
    spent, the session is closed, or the payload does not validate (the message says which)."""

    type: ClassVar[str] = errors.SESSION_REFUSED


_BY_TYPE: dict[str, type[TurnError]] = {
    cls.type: cls
    for cls in (
        InvalidTurnRequest,
        EncryptionRequired,
        TurnBudgetExceeded,
        MaxIterationsExceeded,
        AutonomyBoundaryViolation,
        ToolArgumentsInvalid,
        OutputValidatorError,
        GuardrailBlocked,
        TurnInternalError,
        LLMAuthError,
        LLMInvalidRequest,
        LLMContextTooLong,
        LLMContentFiltered,
        LLMUnavailable,
        CassetteMiss,
        RuntimeIdTaken,
    )
}


Refusal = TypeVar("Refusal", DecisionRefused, SessionRefused)


def refused(error: WorkflowUpdateFailedError, kind: type[Refusal]) -> Refusal:
    """The public error `kind` for an update the turn or session refused, carrying its reason:
    the one mapping of an update's refusal, for every handle and the console alike."""
    cause = error.cause
    return kind(cause.message if isinstance(cause, ApplicationError) else str(cause))


def turn_error(failure: WorkflowFailureError) -> TurnError:
    """The typed exception for a turn's workflow failure."""
    cause = failure.cause
    if isinstance(cause, CancelledError):
        return TurnCancelled("the turn was cancelled")
    if isinstance(cause, TerminatedError):
        return TurnCancelled("the turn was terminated")
    if isinstance(cause, ApplicationError):
        kind = _BY_TYPE.get(cause.type or "", TurnError)
        return kind(cause.message, _report(cause.details))
    return TurnError(str(cause or failure))


def _report(details: Any) -> AgentReport | None:
    try:
        return AgentReport.model_validate(details[0]) if details else None
    except ValidationError:
        return None
