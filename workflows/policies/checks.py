"""Checking a tool call against the worker's policies, where `ToolCalls.settle` begins.

The worker decides in the model call's own activity, as soon as the answer comes
(`ModelCallResult.policy_rulings`), and a call an approver edited is decided again by the
`check_policy` local activity: either way the decision is in history, so a replay reads the
decision the turn acted on, whatever the files say by then, and editing a policy never makes a
turn nondeterministic. A turn without `agent.policy` sends and schedules nothing new, so its
commands are those of a turn from before policies.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.messages import ToolUseBlock
    from turnkeeper.contracts.policies import PolicyDecision
    from turnkeeper.contracts.policy_io import (
        ACTIVITY_CHECK_POLICY,
        PolicyCaller,
        PolicyCheckInput,
        PolicyCheckResult,
    )
    from turnkeeper.workflows.activity_calls import FailTurn, execute
    from turnkeeper.workflows.failures import cause_message
    from turnkeeper.workflows.observation.turn_observer import TurnObserver
    from turnkeeper.workflows.turn_state import Turn

CHECK_POLICY_TIMEOUT: Final = timedelta(seconds=10)
CHECK_POLICY_RETRY: Final = RetryPolicy(maximum_attempts=3)


def caller(turn: Turn) -> PolicyCaller | None:
    """What a model call sends so that the worker checks its answer's tool calls (None without
    `agent.policy`: the call's input stays what it was before policies)."""
    if turn.request.agent.policy is None:
        return None
    request = turn.request
    return PolicyCaller(
        agent_id=request.agent.id,
        tenant=request.tenant or "",
        started_by=turn.started_by or "",
        approvers=request.agent.approver_names() or [],
        cost_usd=round(turn.spend.cost_usd, 6),
        iteration=turn.iteration,
        depth=request.parent.depth if request.parent is not None else 0,
    )


async def check(
    turn: Turn, use: ToolUseBlock, observer: TurnObserver, *, edited: bool = False
) -> PolicyDecision | None:
    """The decision on `use`, recorded and told to every channel; None without `agent.policy`.
    The one its model call brought, unless an approver `edited` the call (or the answer came
    from a worker that did not decide): then the `check_policy` activity decides."""
    spec = turn.request.agent.policy
    called_by = caller(turn)
    if spec is None or called_by is None:
        return None
    result = None if edited else turn.policies.ruling(use.id)
    if result is None:
        result = await _ask_worker(turn, use, called_by)
    decision = PolicyDecision(
        call_id=use.id,
        tool=use.name,
        effect=result.effect,
        policies=list(result.policies),
        enforced=spec.mode == "enforce",
        policy_hash=result.policy_hash,
    )
    turn.policies.record(decision)
    observer.policy_decided(turn, decision)
    return decision


async def _ask_worker(turn: Turn, use: ToolUseBlock, called_by: PolicyCaller) -> PolicyCheckResult:
    options = workflow.LocalActivityConfig(
        start_to_close_timeout=CHECK_POLICY_TIMEOUT,
        retry_policy=CHECK_POLICY_RETRY,
        summary=f"policy · {use.name}",
    )
    call = PolicyCheckInput(caller=called_by, tool=use.name, input=use.input, time=workflow.now())
    # A check that cannot be made is a defect of the worker: the turn stops rather than run a
    # call nobody checked (or, in log_only, report a decision nobody made).
    failing = FailTurn(turn, _broken)
    return await execute(
        ACTIVITY_CHECK_POLICY, call, failing, result_type=PolicyCheckResult, local=options
    )


def forbids(decision: PolicyDecision | None) -> bool:
    return decision is not None and decision.enforced and decision.effect == "forbid"


def asks(decision: PolicyDecision | None) -> bool:
    return decision is not None and decision.enforced and decision.effect == "ask"


def forbidden_text(decision: PolicyDecision) -> str:
    """What the model reads in place of a forbidden call's result."""
    if not decision.policies:
        return f"Not run: no policy permits calling {decision.tool!r}."
    named = ", ".join(repr(name) for name in decision.policies)
    return f"Not run: the call to {decision.tool!r} is forbidden by policy {named}."


def _broken(err: ActivityError) -> tuple[str, str]:
    return errors.TURN_INTERNAL_ERROR, f"the policy check failed: {cause_message(err)}"
