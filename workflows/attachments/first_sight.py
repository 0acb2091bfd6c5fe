"""Attachments that reach a turn with their bytes, stored on first sight.

A client of ours stores a request's attachments before it starts the turn, so the request names
them by reference. One sent another way (the `temporal` CLI, a client of another language) may
carry its bytes in base64, or a URL. The start event keeps that request as it was sent; from
there on the turn holds references only: the bytes go to the `store_attachments` activity in a
claim-checked input (into the content store, not into history again), its result replaces the
blocks in the turn's request and opening message, and a continued run carries the request with
references. A request without such blocks schedules nothing, so existing histories replay as
they were recorded.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.attachment_io import StoreAttachmentsInput, StoreAttachmentsResult
    from turnkeeper.contracts.attachments import StoredSource, provider_kinds
    from turnkeeper.contracts.names import ACTIVITY_STORE_ATTACHMENTS
    from turnkeeper.contracts.turn import TurnRequest
    from turnkeeper.workflows.activity_calls import FailTurn, execute
    from turnkeeper.workflows.failures import cause_message, error_type
    from turnkeeper.workflows.turn_state import Turn

_TIMEOUT = timedelta(minutes=2)
_RETRY = RetryPolicy(maximum_attempts=5)


def needs_storing(request: TurnRequest) -> bool:
    """Whether an attachment of the request came with its bytes (or a URL, or a path)."""
    return any(not isinstance(block.source, StoredSource) for block in request.task.attachments())


async def store(turn: Turn, request: Any) -> Any:
    """Stores what `needs_storing` found, before the turn's first model call; returns what the
    turn carries on into a continued run: `request` as it came, or the turn's own once its
    attachments were stored.

    Fails the turn with InvalidTurnRequest naming the attachment and the limit or type at
    fault; nothing is stored then."""
    if not needs_storing(turn.request):
        return request
    given = StoreAttachmentsInput(
        blocks=turn.request.task.attachments(),
        providers=sorted(provider_kinds(turn.request.agent.models())),
    )
    result = await execute(
        ACTIVITY_STORE_ATTACHMENTS,
        given,
        FailTurn(turn, _refused),
        result_type=StoreAttachmentsResult,
        options=workflow.ActivityConfig(
            start_to_close_timeout=_TIMEOUT, retry_policy=_RETRY, summary="store attachments"
        ),
    )
    turn.attachments_stored(result.blocks)
    return turn.request


def _refused(err: ActivityError) -> tuple[str, str]:
    if error_type(err) == errors.INVALID_TURN_REQUEST:
        return errors.INVALID_TURN_REQUEST, cause_message(err)
    # The store failed after retries: not the request's fault.
    return errors.TURN_INTERNAL_ERROR, f"storing the attachments failed: {cause_message(err)}"
