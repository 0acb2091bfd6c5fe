"""How a turn fails: one typed, non-retryable `ApplicationError` whose `details[0]` is the
partial report. The turn's observer reports it (`TurnObserver.turn_failed`) where it ends the
run."""

from __future__ import annotations

from typing import Any, NoReturn

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, FailureError
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.turn import AgentReport
    from turnkeeper.workflows.inputs import plaintext
    from turnkeeper.workflows.turn_state import Turn


def fail_if_internal_error(turn: Turn, err: ActivityError) -> None:
    """Fails the turn with TurnInternalError when the activity reported a defect of ours."""
    if error_type(err) == errors.TURN_INTERNAL_ERROR:
        fail(turn, errors.TURN_INTERNAL_ERROR, cause_message(err))


def fail(turn: Turn, error_type: str, message: str) -> NoReturn:
    report = turn.report("failed", workflow.now())
    raise ApplicationError(message, report, type=error_type, non_retryable=True)


def decision_refused(problem: str) -> ApplicationError:
    """An update validator's refusal of a turn's `decide`, `extend_budget`, `steer`, `interrupt`
    or `cancel`. A validator leaves no history, so its error type changed without a patch."""
    return ApplicationError(problem, type=errors.DECISION_REFUSED, non_retryable=True)


def invalid_request(payload: Any, problem: str) -> ApplicationError:
    """The failure of a request that never became a turn; its report has what the payload had."""
    return _before_turn(payload, errors.INVALID_TURN_REQUEST, f"invalid turn request: {problem}")


def unencrypted_request(payload: Any) -> ApplicationError:
    """The failure of a request that reached a worker requiring encryption unencrypted."""
    return plaintext.encryption_required("the turn request", _report_of(payload))


def internal_error_before_turn(payload: Any, err: Exception) -> ApplicationError:
    """The failure of a turn that a defect of ours stopped before its loop began."""
    message = f"internal error before the turn began: {type(err).__name__}: {err}"
    return _before_turn(payload, errors.TURN_INTERNAL_ERROR, message)


def _before_turn(payload: Any, error_type: str, message: str) -> ApplicationError:
    return ApplicationError(message, _report_of(payload), type=error_type, non_retryable=True)


def _report_of(payload: Any) -> AgentReport:
    agent = payload.get("agent") if isinstance(payload, dict) else None
    task = payload.get("task") if isinstance(payload, dict) else None
    return AgentReport(
        agent_id=str(agent.get("id", "")) if isinstance(agent, dict) else "",
        task_id=str(task.get("id", "")) if isinstance(task, dict) else "",
        outcome="failed",
    )


def describe(err: ValidationError) -> str:
    problems = []
    for item in err.errors():
        field = ".".join(str(part) for part in item["loc"]) or "request"
        problems.append(f"{field}: {item['msg']}")
    return "; ".join(problems)


def cause_message(err: ActivityError) -> str:
    """The underlying failure's own message, without the "Type: " prefix of its str()."""
    cause = err.cause
    if isinstance(cause, TemporalTimeoutError):
        return f"timed out ({cause.type.name.lower() if cause.type else 'timeout'})"
    if isinstance(cause, FailureError):
        return cause.message
    return str(cause if cause is not None else err)


def error_type(err: ActivityError) -> str | None:
    cause = err.cause
    return cause.type if isinstance(cause, ApplicationError) else None


def timed_out(err: ActivityError) -> bool:
    return isinstance(err.cause, TemporalTimeoutError)
