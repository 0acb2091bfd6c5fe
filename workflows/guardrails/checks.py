"""`agent.guardrails` at the three places a text crosses the turn's edge: the task input before
the first model call, each tool result before the model reads it, and the final answer.

The workflow cannot see the worker's guardrails, only their names: it asks the
`check_guardrails` activity, records every verdict (report, status, the `guardrail_decision`
event, the turn record, the span) and applies the enforced ones. An enforced block of the input
or the answer fails the turn with `GuardrailBlocked`; of a tool result, the model gets an error
result naming the guardrail. A turn that names no guardrails runs no such activity, so its
history is what it was before guardrails.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.guardrail_checks import (
        CheckGuardrailsInput,
        CheckGuardrailsResult,
        GuardedOutcome,
        GuardedText,
    )
    from turnkeeper.contracts.guardrails import GuardrailStage
    from turnkeeper.contracts.messages import ToolResultBlock, ToolUseBlock
    from turnkeeper.contracts.names import ACTIVITY_CHECK_GUARDRAILS
    from turnkeeper.workflows.activity_calls import FailTurn, execute
    from turnkeeper.workflows.activity_options import GUARDRAILS_RETRY, GUARDRAILS_TIMEOUT
    from turnkeeper.workflows.failures import cause_message, error_type, fail
    from turnkeeper.workflows.observation.turn_observer import TurnObserver
    from turnkeeper.workflows.turn_state import Settled, Turn


async def check_input(turn: Turn, observer: TurnObserver) -> None:
    """Before the first model call: a name the worker lacks fails the turn with
    InvalidTurnRequest, an enforced block with GuardrailBlocked, and an enforced redaction
    replaces the task input the model reads."""
    if not turn.request.agent.guardrails:
        return
    [outcome] = await _check(turn, "input", [GuardedText(text=turn.request.task.input)])
    _record(turn, observer, outcome)
    if outcome.blocked_by is not None:
        fail(turn, errors.GUARDRAIL_BLOCKED, _blocked("the task input", outcome))
    if outcome.text is not None:
        turn.redact_task_input(outcome.text)


async def check_tool_results(
    turn: Turn, observer: TurnObserver, uses: list[ToolUseBlock], settled: list[Settled]
) -> list[Settled]:
    """The results of one response's calls as the model will read them: an enforced block
    becomes an error result naming the guardrail, an enforced redaction the replacement."""
    if not turn.request.agent.guardrails:
        return settled
    tools = {use.id: use.name for use in uses}
    texts = [
        GuardedText(
            call_id=s.result.tool_use_id,
            tool=tools.get(s.result.tool_use_id, ""),
            text=s.result.text(),
        )
        for s in settled
    ]
    outcomes = await _check(turn, "tool_result", texts)
    guarded = []
    for done, outcome in zip(settled, outcomes, strict=True):
        _record(turn, observer, outcome)
        guarded.append(_guarded_result(done, outcome))
    return guarded


async def check_answer(turn: Turn, observer: TurnObserver) -> None:
    """The final answer, once the output checks accepted it: an enforced block withholds it and
    fails the turn with GuardrailBlocked (its partial report); an enforced redaction replaces
    it."""
    if not turn.request.agent.guardrails:
        return
    [outcome] = await _check(turn, "answer", [GuardedText(text=turn.messages[-1].text())])
    _record(turn, observer, outcome)
    if outcome.blocked_by is not None:
        turn.redact_answer(f"[answer withheld: the guardrail {outcome.blocked_by!r} blocked it]")
        fail(turn, errors.GUARDRAIL_BLOCKED, _blocked("the final answer", outcome))
    if outcome.text is not None:
        turn.redact_answer(outcome.text)


def _guarded_result(done: Settled, outcome: GuardedOutcome) -> Settled:
    """A result the guardrails changed loses its stored copy: the next model call sends the
    changed text, not the reference to what the tool returned."""
    result = done.result
    if outcome.blocked_by is not None:
        text = (
            f"The tool result was blocked by the guardrail {outcome.blocked_by!r}: {outcome.reason}"
        )
        return Settled(ToolResultBlock(tool_use_id=result.tool_use_id, content=text, is_error=True))
    if outcome.text is not None:
        return Settled(result.model_copy(update={"content": outcome.text}))
    return done


def _record(turn: Turn, observer: TurnObserver, outcome: GuardedOutcome) -> None:
    turn.guardrails.record(outcome.decisions)
    for decision in outcome.decisions:
        observer.guardrail_decided(turn, decision)


def _blocked(what: str, outcome: GuardedOutcome) -> str:
    return f"the guardrail {outcome.blocked_by!r} blocked {what}: {outcome.reason}"


async def _check(
    turn: Turn, stage: GuardrailStage, texts: list[GuardedText]
) -> list[GuardedOutcome]:
    check = CheckGuardrailsInput(
        guardrails=turn.request.agent.guardrail_refs(), stage=stage, texts=texts
    )
    result = await execute(
        ACTIVITY_CHECK_GUARDRAILS,
        check,
        FailTurn(turn, _check_failed),
        result_type=CheckGuardrailsResult,
        options=workflow.ActivityConfig(
            start_to_close_timeout=GUARDRAILS_TIMEOUT,
            retry_policy=GUARDRAILS_RETRY,
            summary=f"guardrails · {stage.replace('_', ' ')} · {turn.iteration}",
        ),
    )
    return result.outcomes


def _check_failed(err: ActivityError) -> tuple[str, str]:
    """A guardrail the worker lacks is the request's failure; a check that never answered
    blocks (what no guardrail judged does not go through)."""
    if error_type(err) == errors.INVALID_TURN_REQUEST:
        return errors.INVALID_TURN_REQUEST, cause_message(err)
    return errors.GUARDRAIL_BLOCKED, f"the guardrails could not check: {cause_message(err)}"
