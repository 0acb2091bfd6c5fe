"""Activities through which a turn reads and writes its agent's standing approvals.

A workflow could signal the cache itself, but it cannot create it: signal-with-start is a client
call. Doing both through activities keeps the turn's side of the protocol to two small,
retryable steps, and lets the lookup treat "this agent has no cache yet" as "no standing
approvals" rather than as an error.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Final

from pydantic import ValidationError
from temporalio import activity
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode
from turnkeeper.contracts.approvals import (
    ACTIVITY_APPROVAL_CACHE_LOOKUP,
    ACTIVITY_APPROVAL_CACHE_REMEMBER,
    APPROVAL_CACHE_WORKFLOW,
    INVALID_STANDING_APPROVAL,
    SIGNAL_REMEMBER,
    UPDATE_LOOKUP,
    ApprovalCacheInput,
    ApprovalCacheLookupInput,
    ApprovalCacheRememberInput,
    LookupInput,
    LookupResult,
    RememberInput,
    approval_cache_id,
)
from turnkeeper.contracts.search_attributes import AGENT_ID

from turnkeeper.ground.logs import get_logger
from turnkeeper.ground.runtime_workflows import check_kept, reaching

log = get_logger(__name__)

# The cache answers in milliseconds when a worker runs it; without one, fail the attempt soon
# (and let the activity retry) rather than hang until the activity's own timeout.
RPC_TIMEOUT: Final = timedelta(seconds=10)
# The server refuses an update with FAILED_PRECONDITION ("workflow not ready") when the cache's
# workflow task failed, which happens in the ordinary course when messages arrive while a run
# continues as new (the server rejects that continue-as-new until they are handled). The next
# task follows within milliseconds, so the lookup is tried again at once instead of burning an
# activity attempt and its backoff.
_NOT_READY_PAUSES: Final = (0.05, 0.1, 0.2, 0.4)


class ApprovalCacheActivities:
    """Register `approval_cache_lookup` and `approval_cache_remember` with the worker.

    Args:
        client: the worker's Temporal client.
        task_queue: where a new cache workflow runs; the calling activity's task queue by
            default, which is the turn's, whose workers also run `ApprovalCacheWorkflow`.
    """

    def __init__(self, client: Client, task_queue: str | None = None) -> None:
        self._client = client
        self._task_queue = task_queue

    @activity.defn(name=ACTIVITY_APPROVAL_CACHE_LOOKUP)
    async def approval_cache_lookup(self, question: ApprovalCacheLookupInput) -> LookupResult:
        """The tools among `question.tools` with a standing approval; none when the agent has
        no cache yet."""
        if not question.tools:
            return LookupResult()
        cache_id = approval_cache_id(question.agent_id)
        handle = self._client.get_workflow_handle(cache_id)
        async with reaching(self._client, cache_id, APPROVAL_CACHE_WORKFLOW):
            for pause in (*_NOT_READY_PAUSES, None):
                try:
                    return await handle.execute_update(
                        UPDATE_LOOKUP,
                        LookupInput(tools=question.tools),
                        result_type=LookupResult,
                        rpc_timeout=RPC_TIMEOUT,
                    )
                except RPCError as err:
                    # NOT_FOUND: never created, or closed (terminated by an operator): none
                    # stand.
                    if err.status == RPCStatusCode.NOT_FOUND:
                        return LookupResult()
                    if err.status != RPCStatusCode.FAILED_PRECONDITION or pause is None:
                        raise
                    await asyncio.sleep(pause)
        raise AssertionError("unreachable: the last pass re-raises")

    @activity.defn(name=ACTIVITY_APPROVAL_CACHE_REMEMBER)
    async def approval_cache_remember(self, approval: ApprovalCacheRememberInput) -> None:
        """Stores a standing approval, creating the agent's cache on first use."""
        try:
            signal = RememberInput(
                tool=approval.tool,
                approver=approval.approver,
                reason=approval.reason,
                at=approval.at,
                grant=approval.grant,
            )
        except ValidationError as err:
            raise ApplicationError(
                f"cannot remember an approval of {approval.tool!r}: {err}",
                type=INVALID_STANDING_APPROVAL,
                non_retryable=True,
            ) from None
        cache_id = approval_cache_id(approval.agent_id)
        await self._client.start_workflow(
            APPROVAL_CACHE_WORKFLOW,
            ApprovalCacheInput(agent_id=approval.agent_id),
            id=cache_id,
            task_queue=self._task_queue or activity.info().task_queue,
            start_signal=SIGNAL_REMEMBER,
            start_signal_args=[signal],
            static_summary=f"Standing approvals of agent {approval.agent_id}",
            search_attributes=TypedSearchAttributes(
                [SearchAttributePair(AGENT_ID, approval.agent_id)]
            ),
            rpc_timeout=RPC_TIMEOUT,
        )
        # A signal-with-start that meets a running workflow signals it, whatever its type: a
        # squatter would swallow the approval without a word. Remembering is rare, so always
        # worth the one look.
        await check_kept(self._client, cache_id, APPROVAL_CACHE_WORKFLOW)
        log.info(
            "standing_approval_remembered",
            agent_id=approval.agent_id,
            tool=approval.tool,
            approver=approval.approver,
        )
