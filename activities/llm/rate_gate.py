"""The model call's step before the provider: wait for fleet capacity under
`TURNKEEPER_RATE_LIMITS`, settle the tokens after, and share a provider's 429 with the fleet.

The wait happens here, inside the model-call activity, so a model with no limit costs nothing
(no round trip, no history event: the turn's commands stay the same) and the workflow never
reads the environment: it learns of a wait from the result's `capacity_wait_ms`, and while the
wait lasts from one `capacity_wait` signal. Capacity comes from the key's `RateLimiterWorkflow`
(`workflows/fleet/rate_limiter_workflow.py` says why a ledger and not a task-queue rate limit).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from temporalio import activity
from temporalio.client import (
    Client,
    RPCTimeoutOrCancelledError,
    WithStartWorkflowOperation,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError
from turnkeeper.activities.providers.provider import ModelRequest
from turnkeeper.contracts.activity_io import ModelCallInput
from turnkeeper.contracts.rate_limits import (
    RATE_LIMITER_WORKFLOW,
    SIGNAL_BACK_OFF,
    SIGNAL_CAPACITY_WAIT,
    SIGNAL_SETTLE,
    UPDATE_ACQUIRE,
    AcquireInput,
    AcquireResult,
    BackOffInput,
    CapacityWait,
    RateLimit,
    RateLimiterInput,
    SettleTokensInput,
    limit_key,
    rate_limiter_id,
)
from turnkeeper.contracts.turn import Usage

from turnkeeper.ground.ledger_busy import asking, forget_start_failure, is_busy
from turnkeeper.ground.logs import get_logger
from turnkeeper.ground.runtime_workflows import check_kept

log = get_logger(__name__)

RPC_TIMEOUT: Final = timedelta(seconds=10)
# Heartbeat at least this often while waiting (the model call's heartbeat timeout is 30 s), so a
# cancelled turn stops waiting soon.
MAX_PAUSE_S: Final = 5.0
# A busy ledger (`turnkeeper/ground/ledger_busy.py`) is asked again after a short, jittered pause
# instead of failing the model call's attempt.
BUSY_PAUSE_S: Final = 0.2
# Characters per token of the input estimate (settled with the provider's count after the call).
CHARS_PER_TOKEN: Final = 4


@dataclass
class Grant:
    """Capacity taken for one call: the key, the grant's id, and how long it was waited for."""

    key: str
    id: str
    waited_ms: int
    input_tokens: int = 0
    output_tokens: int = 0


class RateGate:
    """Waits for capacity of the limits that apply to a model, across the fleet.

    Args:
        client: the worker's Temporal client (None: no limits can apply).
        limits: `TURNKEEPER_RATE_LIMITS` parsed (`contracts.rate_limits.parse_rate_limits`).
        task_queue: where a new ledger runs; the calling activity's task queue by default.
    """

    def __init__(
        self, client: Client | None, limits: dict[str, RateLimit], task_queue: str | None = None
    ) -> None:
        self._client = client
        self._limits = limits
        self._task_queue = task_queue

    def key_of(self, model: str) -> str | None:
        """The limit key of `model`, or None when no limit applies."""
        return limit_key(self._limits, model) if self._client is not None else None

    async def acquire(self, call: ModelCallInput, request: ModelRequest) -> Grant | None:
        """Reserves the call's capacity in every window of its key and waits (heartbeating)
        until the reserved instant; None at once when no limit applies. Never fails for the
        limit."""
        key = self.key_of(call.model)
        if key is None:
            return None
        info = activity.info()
        ask = AcquireInput(
            id=f"{info.workflow_id}/{info.activity_id}/{info.attempt}",
            limit=self._limits[key],
            input_tokens=estimate_input_tokens(request),
            output_tokens=request.max_tokens,
        )
        started = time.monotonic()
        answer = await self._ask(key, ask)
        while answer is None:
            await _pause(BUSY_PAUSE_S * (0.5 + random.random()))
            answer = await self._ask(key, ask)
        if answer.wait_ms > 0:
            # The call's capacity is reserved at that instant: it starts then, without asking
            # the ledger again.
            await self._tell_turn(key, answer)
            await _pause(answer.wait_ms / 1000)
        waited_ms = int((time.monotonic() - started) * 1000)
        return Grant(key, ask.id, waited_ms, ask.input_tokens, ask.output_tokens)

    async def settle(self, grant: Grant | None, usage: Usage | None) -> None:
        """Replaces the grant's estimate with the tokens the provider counted; None: the call
        failed, and its estimate stands (the ledger still hears the call is over)."""
        if grant is None or self._client is None:
            return
        counted = SettleTokensInput(
            id=grant.id, input_tokens=grant.input_tokens, output_tokens=grant.output_tokens
        )
        if usage is not None:
            counted.input_tokens = (
                usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
            )
            counted.output_tokens = usage.output_tokens
        await self._signal(grant.key, SIGNAL_SETTLE, counted)

    async def back_off(self, model: str, seconds: float) -> None:
        """The provider rate-limited `model`: the whole fleet waits `seconds` on its key."""
        key = self.key_of(model)
        if key is None:
            return
        log.info("rate_limit_back_off", key=key, seconds=seconds)
        await self._signal(key, SIGNAL_BACK_OFF, BackOffInput(seconds=seconds))

    async def _ask(self, key: str, ask: AcquireInput) -> AcquireResult | None:
        """The ledger's answer; None when it is too busy to answer now."""
        assert self._client is not None
        start = WithStartWorkflowOperation(
            RATE_LIMITER_WORKFLOW,
            RateLimiterInput(key=key),
            id=rate_limiter_id(key),
            task_queue=self._task_queue or activity.info().task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            static_summary=f"Rate limit {key}",
        )
        ledger = rate_limiter_id(key)
        try:
            async with asking(ledger):
                return await self._client.execute_update_with_start_workflow(
                    UPDATE_ACQUIRE,
                    ask,
                    start_workflow_operation=start,
                    result_type=AcquireResult,
                    rpc_timeout=RPC_TIMEOUT,
                )
        except RPCError as err:
            forget_start_failure(start)
            if is_busy(err):
                return None
            await check_kept(self._client, ledger, RATE_LIMITER_WORKFLOW)
            raise
        except (WorkflowUpdateFailedError, RPCTimeoutOrCancelledError) as err:
            forget_start_failure(start)
            # A squatter refuses every update, or (run by no worker) never answers: named here
            # rather than asked again forever.
            await check_kept(self._client, ledger, RATE_LIMITER_WORKFLOW)
            if isinstance(err, RPCTimeoutOrCancelledError):
                raise
            # Aborted by the ledger's continue-as-new: the next run answers.
            return None

    async def _signal(self, key: str, name: str, arg: object) -> None:
        # Best effort: a lost settle leaves the estimate (an over-count, never an overshoot); a
        # lost back-off leaves this turn's own retry delay in force.
        assert self._client is not None
        try:
            await self._client.get_workflow_handle(rate_limiter_id(key)).signal(
                name, arg, rpc_timeout=RPC_TIMEOUT
            )
        except RPCError as err:
            log.warning("rate_limit_signal_failed", key=key, signal=name, error=str(err))

    async def _tell_turn(self, key: str, answer: AcquireResult) -> None:
        """Lets the turn's `status` show what its call awaits (best effort)."""
        assert self._client is not None
        awaiting = answer.awaiting or "requests"
        wait = CapacityWait(key=key, awaiting=awaiting, wait_ms=answer.wait_ms)
        try:
            handle = self._client.get_workflow_handle(activity.info().workflow_id or "")
            await handle.signal(SIGNAL_CAPACITY_WAIT, wait, rpc_timeout=RPC_TIMEOUT)
        except RPCError as err:
            log.warning("capacity_wait_signal_failed", key=key, error=str(err))


async def _pause(seconds: float) -> None:
    """Sleeps `seconds`, heartbeating every MAX_PAUSE_S."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        activity.heartbeat()
        await asyncio.sleep(min(left, MAX_PAUSE_S))


def estimate_input_tokens(request: ModelRequest) -> int:
    """A cheap upper-leaning estimate of the request's input tokens (settled after the call)."""
    chars = len(request.system or "")
    chars += sum(len(message.model_dump_json()) for message in request.messages)
    chars += sum(len(str(tool)) for tool in request.tools)
    return max(1, chars // CHARS_PER_TOKEN)
