"""Timeouts and retry policies of the turn's activities, in one place so they can be read and
argued about together."""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.approvals import INVALID_STANDING_APPROVAL

# Model calls: 6 attempts, waiting 2, 4, 8, 16, 32 s between them (a provider's `retry-after`
# overrides a wait). About a minute of provider trouble is ridden out before the turn reports
# LLMUnavailable; refusals (auth, invalid request, context too long, content filter) are never
# retried because every attempt is billed and would fail the same way.
MODEL_CALL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=2),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=6,
    # The activity marks refusals non_retryable itself; listing their types here too would
    # write the list into history with every model call.
)
MODEL_CALL_TIMEOUT = timedelta(minutes=10)
MODEL_CALL_HEARTBEAT = timedelta(seconds=30)

# Tool calls: a tool's own failure comes back as an is_error result, not an exception; the retry
# policy (workflows/tools/retries.py) only covers a lost worker, and depends on idempotency.
TOOL_CALL_TIMEOUT = timedelta(minutes=5)

# Tools that run longer than this are heartbeated, so a dead worker is noticed in this time
# instead of at the end of the tool's own timeout.
TOOL_HEARTBEAT = timedelta(seconds=20)
# Time a tool activity gets beyond the tool's own timeout: the worker turns the tool's timeout
# into a readable result, which needs a moment to travel back.
TOOL_TIMEOUT_MARGIN = timedelta(seconds=10)

# A session reading its conversation back after continue-as-new: a store read, retried briefly
# (the activity marks a lost conversation non-retryable itself).
LOAD_CONVERSATION_TIMEOUT = timedelta(seconds=60)
LOAD_CONVERSATION_RETRY = RetryPolicy(maximum_attempts=5)

# Discovering the MCP servers' tools at a turn's start: a listing per server, heartbeated.
MCP_DISCOVERY_TIMEOUT: Final = timedelta(seconds=120)
MCP_DISCOVERY_HEARTBEAT: Final = timedelta(seconds=10)
MCP_DISCOVERY_RETRY: Final = RetryPolicy(maximum_attempts=3)

# Reading a few SKILL.md front matters: quick, or the worker is gone (then a retry finds another).
DESCRIBE_SKILLS_TIMEOUT: Final = timedelta(seconds=30)
DESCRIBE_SKILLS_RETRY: Final = RetryPolicy(maximum_attempts=3)

# Validators are the application's code, often a quick check, sometimes a call to a service.
VALIDATE_OUTPUT_TIMEOUT: Final = timedelta(seconds=60)
# Retries cover a lost worker only: a validator's own failure is non-retryable.
VALIDATE_OUTPUT_RETRY: Final = RetryPolicy(maximum_attempts=3)
# Guardrails likewise (`agent.guardrails`); one that raises blocks, so retries cover a lost worker.
GUARDRAILS_TIMEOUT: Final = timedelta(seconds=60)
GUARDRAILS_RETRY: Final = RetryPolicy(maximum_attempts=3)

# The agent's standing approvals, two local activities: a signed grant that does not verify is
# refused the same way on every attempt.
APPROVAL_CACHE_TIMEOUT: Final = timedelta(seconds=30)
APPROVAL_CACHE_RETRY: Final = RetryPolicy(
    maximum_attempts=3, non_retryable_error_types=[INVALID_STANDING_APPROVAL]
)

# An approver's cancel, one call to the Temporal service: retried a few times, then the update
# says it failed.
CANCEL_TURN_TIMEOUT: Final = timedelta(seconds=30)
CANCEL_TURN_RETRY: Final = RetryPolicy(maximum_attempts=5, maximum_interval=timedelta(seconds=5))
