"""Standing approvals (seed 002's progressive automation): a human's `remember: true` lets later
turns of the same agent run that tool without asking. They live in the agent's
`ApprovalCacheWorkflow`; a turn reaches it through two small local activities, one batched
lookup per iteration that needs approvals and one remember per remembered decision."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.approvals import (
        ACTIVITY_APPROVAL_CACHE_LOOKUP,
        ACTIVITY_APPROVAL_CACHE_REMEMBER,
        INVALID_STANDING_APPROVAL,
        ApprovalCacheLookupInput,
        ApprovalCacheRememberInput,
        LookupResult,
        SignedGrant,
    )
    from turnkeeper.contracts.signals import DecisionRecord
    from turnkeeper.workflows.failures import cause_message
    from turnkeeper.workflows.signed_decisions import standing_problem
    from turnkeeper.workflows.turn_state import Turn

_TIMEOUT = timedelta(seconds=30)
_RETRY = RetryPolicy(maximum_attempts=3, non_retryable_error_types=[INVALID_STANDING_APPROVAL])


async def standing_for(turn: Turn, tools: list[str]) -> set[str]:
    """The tools among `tools` that the agent may run without asking. When the cache cannot be
    read, none: a human is asked, which is the safe side."""
    if not tools:
        return set()
    question = ApprovalCacheLookupInput(agent_id=turn.request.agent.id, tools=tools)
    try:
        answer = await workflow.execute_local_activity(
            ACTIVITY_APPROVAL_CACHE_LOOKUP,
            question,
            result_type=LookupResult,
            start_to_close_timeout=_TIMEOUT,
            retry_policy=_RETRY,
            summary=f"standing approvals · {', '.join(tools)}",
        )
    except ActivityError as err:
        if is_cancelled_exception(err):
            raise
        workflow.logger.warning("standing approvals unreadable; asking: %s", cause_message(err))
        return set()
    if not turn.request.agent.approver_keys():
        return set(answer.approved)
    return _verified(turn, answer)


def _verified(turn: Turn, answer: LookupResult) -> set[str]:
    """The standing approvals a turn with keyed approvers may use: those whose signed grant its
    own keys verify. The others are logged and the call waits for a human."""
    trusted = set()
    for approval in answer.standing:
        problem = standing_problem(turn.request.agent, approval)
        if problem is None:
            trusted.add(approval.tool)
        else:
            workflow.logger.warning(
                "standing approval not used; asking: %s", problem, extra={"tool": approval.tool}
            )
    return trusted


async def remember(turn: Turn, decision: DecisionRecord, grant: SignedGrant | None) -> None:
    """Stores a standing approval for (agent, tool), with the signed decision that granted it
    when there is one. The call itself is approved either way, so a failure here is logged, not
    fatal."""
    approval = ApprovalCacheRememberInput(
        agent_id=turn.request.agent.id,
        tool=decision.tool,
        approver=decision.approver,
        reason=decision.reason,
        at=decision.at,
        grant=grant,
    )
    try:
        await workflow.execute_local_activity(
            ACTIVITY_APPROVAL_CACHE_REMEMBER,
            approval,
            start_to_close_timeout=_TIMEOUT,
            retry_policy=_RETRY,
            summary=f"remember approval · {decision.tool}",
        )
    except ActivityError as err:
        if is_cancelled_exception(err):
            raise
        workflow.logger.warning("standing approval not stored: %s", cause_message(err))


def standing_decision(call_id: str, tool: str, signed: bool) -> DecisionRecord:
    return DecisionRecord(
        call_id=call_id,
        tool=tool,
        approved=True,
        approver="standing approval",
        standing=True,
        signed=signed,
        at=workflow.now(),
    )
