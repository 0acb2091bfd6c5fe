"""When Temporal may run a worker tool call again, and what the model is told when it did not.

A tool's own failures (a refusal, an exception, its timeout) are answers for the model: the
`tool_call` activity returns them as `is_error` results and Temporal never retries them. Retries
only concern the activity itself failing, and the one failure that matters is a worker that dies
(crash, OOM kill, lost host or network) while a call runs. Exactly what happens then:

1. The worker took the activity task and started the tool; the server knows only that the
   attempt started. Nothing reports the death itself.
2. The server notices when the attempt stops heartbeating: the activity heartbeats every half
   `heartbeat_timeout` while the tool runs, so the attempt times out (type HEARTBEAT) about
   `heartbeat_timeout` after the last beat. Without a heartbeat timeout it would be noticed only
   at `start_to_close_timeout` (the tool's `timeout_s` plus a margin).
3. Whether the tool's effect happened is unknown: the worker may have died before the tool
   touched anything, in the middle, or after it finished but before the result was reported.
4. **Idempotent tool** (`WorkerTool.idempotent`, the default): the server schedules attempt 2
   after the backoff (1 s, then 2 s), on any worker polling the task queue. The tool runs again
   with the same `ToolContext.idempotency_key` and `attempt` 2. Running twice is harmless by
   definition; a tool that calls an external service passes the key so that the service
   deduplicates. After `IDEMPOTENT_ATTEMPTS` failed attempts the workflow gets an
   `ActivityError` and gives the model an `is_error` result saying the tool did not complete.
5. **Non-idempotent tool**: `maximum_attempts=1`. The timed-out attempt is final: the workflow
   gets an `ActivityError` at once and gives the model the `is_error` result of
   `interrupted_call_text` ("... may or may not have completed; it was not retried because it
   is not idempotent"). A started effect is never repeated behind the model's back; the model
   can look (e.g. read the file) before deciding to call again. A new call from the model has a
   new call id and so a new idempotency key: the key deduplicates retries, not repeated asks.

A worker shutting down gracefully first waits `graceful_shutdown_timeout` for running calls; a
call still running then is cancelled, its attempt ends without a result, and steps 3-5 apply.

The death of the worker running the *workflow* changes nothing here: the activity keeps running
where it is, and the workflow, replayed on another worker, receives its result from history
without running it again.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from temporalio.common import RetryPolicy

IDEMPOTENT_ATTEMPTS: Final = 3

# Short backoff: what is retried is a lost worker or an infrastructure hiccup, not the tool's
# own failure, so another worker usually succeeds at once.
IDEMPOTENT_RETRY: Final = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=IDEMPOTENT_ATTEMPTS,
)
AT_MOST_ONCE: Final = RetryPolicy(maximum_attempts=1)


def tool_retry_policy(idempotent: bool) -> RetryPolicy:
    """The retry policy of one worker tool's `tool_call` activity.

    Args:
        idempotent: the tool's `WorkerTool.idempotent` (`ToolTraits.idempotent`).

    Returns:
        Three attempts with backoff for an idempotent tool; a single attempt otherwise, so a
        call whose worker died is reported to the model instead of being run a second time.
    """
    return IDEMPOTENT_RETRY if idempotent else AT_MOST_ONCE


def interrupted_call_text(tool: str, idempotent: bool, cause: str) -> str:
    """The `is_error` result of a call whose activity failed (`cause`: what Temporal said,
    e.g. "activity Heartbeat timeout"), for the model to act on."""
    text = f"Tool {tool!r} did not complete: {cause}."
    if idempotent:
        return text + " Retrying it did not help; you may call it again later."
    return (
        text + " The tool may or may not have completed; it was not retried because it is not"
        " idempotent. Check its effect before calling it again."
    )
