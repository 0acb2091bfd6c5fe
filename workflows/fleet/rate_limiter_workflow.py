"""`RateLimiterWorkflow`: the sliding-window ledger of one rate-limit key, shared by every turn
and every worker of the namespace (workflow id `rate-limit-<key>`).

Why a ledger and not Temporal's task-queue rate limit (`max_task_queue_activities_per_second`):
that limit counts activity starts per second on one task queue, smoothed as a token bucket; it
cannot count tokens, cannot settle an estimate after the call, cannot hold a strict 60-second
window, and cannot be paused by a provider's 429. One workflow per key, whose updates run one at a
time, gives all of these with Temporal's own durability: the model-call activity asks through
update-with-start (`acquire`) and is given the instant its call may start (a reservation, first
come first served, so it asks once and never polls: the server admits only a few updates in flight
per workflow), waits until then itself, and reports the actual tokens
(`settle`) or a provider's 429 (`back_off`) by signal. The history grows with every message, so
the ledger continues as new, carrying the live window, when Temporal suggests it or after
`max_history_events`.
"""

from __future__ import annotations

from typing import Final

from temporalio import workflow
from temporalio.common import VersioningBehavior

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.rate_limits import (
        QUERY_WINDOW,
        RATE_LIMITER_WORKFLOW,
        SIGNAL_BACK_OFF,
        SIGNAL_SETTLE,
        UPDATE_ACQUIRE,
        AcquireInput,
        AcquireResult,
        BackOffInput,
        Grant,
        RateLimiterInput,
        SettleTokensInput,
    )
    from turnkeeper.workflows.fleet import rate_window

# Grants are spaced by the window plus this fraction of it (2 s of a 60-s window). Why: the ledger
# grants at instant t on its own clock (`workflow.now()`), but the request reaches the provider a
# varying moment later: the update's answer travels back, the activity sleeps, the worker's event
# loop gets to it, the HTTP request is sent. Sleeping from the answer's arrival only ever makes a
# call later, never earlier than its grant, so what breaks the provider's window is an EARLIER
# grant that arrived late (a burst of first-minute grants, answered while the server and the
# workers are busiest) followed by a later grant that arrives on time: the two reach the provider
# less than 60 s apart. Starting calls at the granted absolute instant would not help (it removes
# only the harmless lateness of the later call, and adds the clocks' skew between machines); a
# slack does: two grants one window apart reach the provider at least one window apart unless
# the earlier one was late by more than the slack. Its price is throughput: N requests per
# 62 s instead of 60 (3 %). Passed to the pure functions as a longer window, so `rate_window`
# stays the strict arithmetic it is; `window_ms` itself (the input, the `window` query) is
# unchanged.
SLACK_FRACTION: Final = 30


@workflow.defn(name=RATE_LIMITER_WORKFLOW)
class RateLimiterWorkflow:
    @workflow.init
    def __init__(self, start: RateLimiterInput) -> None:
        self._key = start.key
        self._grants = list(start.grants)
        self._blocked_until_ms = start.blocked_until_ms
        self._back_offs = start.back_offs
        self._max_history_events = start.max_history_events
        self._window_ms = start.window_ms
        self._spacing_ms = start.window_ms + start.window_ms // SLACK_FRACTION
        # A run that has handled nothing never continues as new (no loop on a long history).
        self._handled = 0

    @workflow.run
    async def run(self, start: RateLimiterInput) -> None:
        await workflow.wait_condition(self._history_is_long)
        await workflow.wait_condition(workflow.all_handlers_finished)
        # The window's state carries over: no grant of the last 60 s is forgotten.
        workflow.continue_as_new(self.window())

    def _history_is_long(self) -> bool:
        info = workflow.info()
        return self._handled > 0 and (
            info.is_continue_as_new_suggested()
            or info.get_current_history_length() >= self._max_history_events
        )

    @workflow.update(name=UPDATE_ACQUIRE)
    def acquire(self, ask: AcquireInput) -> AcquireResult:
        """Reserves the call's capacity at the earliest instant it fits (`rate_window.reserve`)
        and says how long until then; the caller starts at that instant without asking again.
        An asker already granted (a retried request) gets its reservation, not a second one."""
        self._handled += 1
        now_ms = self._now_ms()
        self._grants = rate_window.live(self._grants, now_ms, self._spacing_ms)
        for grant in self._grants:
            if grant.id == ask.id:
                return AcquireResult(granted=True, wait_ms=max(0, grant.at_ms - now_ms))
        at_ms, awaiting = rate_window.reserve(
            self._grants, ask, now_ms, self._blocked_until_ms, self._spacing_ms
        )
        self._grants.append(
            Grant(
                id=ask.id,
                at_ms=at_ms,
                input_tokens=ask.input_tokens,
                output_tokens=ask.output_tokens,
            )
        )
        return AcquireResult(granted=True, wait_ms=at_ms - now_ms, awaiting=awaiting)

    @workflow.signal(name=SIGNAL_SETTLE)
    def settle(self, counted: SettleTokensInput) -> None:
        """Replaces a grant's estimated tokens with those the provider counted."""
        self._handled += 1
        rate_window.settle(self._grants, counted.id, counted.input_tokens, counted.output_tokens)

    @workflow.signal(name=SIGNAL_BACK_OFF)
    def back_off(self, backoff: BackOffInput) -> None:
        """The provider said its limit is spent: no grant for the whole fleet until it resets."""
        self._handled += 1
        until = self._now_ms() + int(backoff.seconds * 1000)
        self._blocked_until_ms = max(self._blocked_until_ms, until)
        self._back_offs += 1
        workflow.logger.info("rate limit backs off", extra={"key": self._key, "s": backoff.seconds})

    @workflow.query(name=QUERY_WINDOW)
    def window(self) -> RateLimiterInput:
        """The live grants of the window and the provider's back-off, if any."""
        return RateLimiterInput(
            key=self._key,
            grants=rate_window.live(self._grants, self._now_ms(), self._spacing_ms),
            blocked_until_ms=self._blocked_until_ms,
            back_offs=self._back_offs,
            max_history_events=self._max_history_events,
            window_ms=self._window_ms,
        )

    @staticmethod
    def _now_ms() -> int:
        return int(workflow.now().timestamp() * 1000)


# AUTO_UPGRADE for the same reason as the approval cache: it never ends, so pinned it would keep
# its first build polling forever. Registered only by versioned workers.
@workflow.defn(name=RATE_LIMITER_WORKFLOW, versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
class UpgradingRateLimiterWorkflow(RateLimiterWorkflow):
    """`RateLimiterWorkflow` as a versioned worker runs it: always on the current build."""

    @workflow.init
    def __init__(self, start: RateLimiterInput) -> None:
        super().__init__(start)

    @workflow.run
    async def run(self, start: RateLimiterInput) -> None:
        await super().run(start)
