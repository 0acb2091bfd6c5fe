"""Whether a human's decision (the `approve` signal, the `decide` update) may apply to the turn
now: it names a waiting call and an allowed approver, an edited input fits the tool, and on a
turn whose approvers have keys its signature verifies and was not spent before. Read-only, so
the `decide` validator can ask it as the handlers do."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.signals import ALL_PENDING, ApproveInput, SignedCall
    from turnkeeper.contracts.tool_validation import validation_problems
    from turnkeeper.workflows.approvals import signatures as signed_decisions
    from turnkeeper.workflows.approvals.pending import PendingCalls
    from turnkeeper.workflows.tools.calls import schema_of
    from turnkeeper.workflows.turn_state import Turn


def decision_problem(
    turn: Turn | None, pending: PendingCalls, decision: ApproveInput
) -> str | None:
    """Why `decision` must not apply now, or None."""
    approvers = turn.request.agent.approver_names() if turn else None
    problem = pending.decision_problem(decision, approvers)
    if problem is None and decision.input is not None:
        problem = _edit_problem(turn, pending, decision)
    if problem is None and turn is not None:
        problem = signed_decisions.decision_problem(
            turn.request.agent,
            decision,
            signed_call(turn, pending, decision),
            workflow.now(),
            turn.approvals.spent_stars(),
            turn.approvals.signing_version,
        )
    return problem


def signed_call(turn: Turn | None, pending: PendingCalls, decision: ApproveInput) -> SignedCall:
    """What a signature on `decision` binds: its call's tool and input as the model sent
    them (not as an edit would change them), or `*` for every waiting call."""
    waiting = pending.get(decision.call_id)
    agent_id = turn.request.agent.id if turn else ""
    run = turn.approvals.signed_run_id if turn else None
    workflow_id = workflow.info().workflow_id
    if waiting is None:
        return SignedCall(workflow_id, agent_id, ALL_PENDING, first_run_id=run)
    return SignedCall(workflow_id, agent_id, waiting.use.name, waiting.use.input, run)


def _edit_problem(turn: Turn | None, pending: PendingCalls, decision: ApproveInput) -> str | None:
    waiting = pending.get(decision.call_id)
    if waiting is None or turn is None or decision.input is None:
        return None
    if waiting.asked is not None:
        return None  # an answer to a server's question, checked against its schema (pending.py)
    schema = schema_of(turn, waiting.use.name)
    problems = validation_problems(schema, decision.input) if schema is not None else []
    if problems:
        return f"the edited input does not fit {waiting.use.name!r}: " + "; ".join(problems)
    return None
