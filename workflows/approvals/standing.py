"""Standing approvals (seed 002's progressive automation): a human's `remember: true` lets later
turns of the same agent run that tool without asking. They live in the agent's
`ApprovalCacheWorkflow`; a turn reaches it through two small local activities, one batched
lookup per iteration that needs approvals and one remember per remembered decision."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.approvals import (
        ACTIVITY_APPROVAL_CACHE_LOOKUP,
        ACTIVITY_APPROVAL_CACHE_REMEMBER,
        ApprovalCacheLookupInput,
        ApprovalCacheRememberInput,
        LookupResult,
        SignedGrant,
    )
    from turnkeeper.contracts.signals import DecisionRecord
    from turnkeeper.workflows.activity_calls import CarryOn, execute
    from turnkeeper.workflows.activity_options import APPROVAL_CACHE_RETRY, APPROVAL_CACHE_TIMEOUT
    from turnkeeper.workflows.approvals.signatures import standing_problem
    from turnkeeper.workflows.turn_state import Turn


async def standing_for(turn: Turn, tools: list[str]) -> set[str]:
    """The tools among `tools` that the agent may run without asking. When the cache cannot be
    read, none: a human is asked, which is the safe side."""
    if not tools:
        return set()
    question = ApprovalCacheLookupInput(agent_id=turn.request.agent.id, tools=tools)
    answer = await execute(
        ACTIVITY_APPROVAL_CACHE_LOOKUP,
        question,
        CarryOn(None, "standing approvals unreadable; asking: %s"),
        result_type=LookupResult,
        local=_options(f"standing approvals · {', '.join(tools)}"),
    )
    if answer is None:
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
    await execute(
        ACTIVITY_APPROVAL_CACHE_REMEMBER,
        approval,
        CarryOn(None, "standing approval not stored: %s"),
        local=_options(f"remember approval · {decision.tool}"),
    )


def _options(summary: str) -> workflow.LocalActivityConfig:
    return workflow.LocalActivityConfig(
        start_to_close_timeout=APPROVAL_CACHE_TIMEOUT,
        retry_policy=APPROVAL_CACHE_RETRY,
        summary=summary,
    )


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
