"""Which tool calls are retried: an idempotent tool's up to three attempts, any other's one.
(The retries themselves, on a real server: tests/activities/test_tool_retries.py.)"""

from __future__ import annotations

from turnkeeper.workflows.tools.retries import AT_MOST_ONCE, IDEMPOTENT_RETRY, tool_retry_policy


def test_only_idempotent_tools_are_retried() -> None:
    assert tool_retry_policy(True) is IDEMPOTENT_RETRY and IDEMPOTENT_RETRY.maximum_attempts == 3
    assert tool_retry_policy(False) is AT_MOST_ONCE and AT_MOST_ONCE.maximum_attempts == 1
