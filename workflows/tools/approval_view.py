"""What an approver reads beside a waiting call, besides its input: the model's words before
it, and for a built-in `write_file` call a preview. Before such a call waits, the turn asks the
worker (where the workspace is) for the difference the write would make, so that the approver
reads a diff against the file as it is, not the new content alone.

A preview is a help, not a step the turn depends on: when it fails the call waits without one.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.messages import ToolUseBlock
    from turnkeeper.contracts.names import ACTIVITY_WRITE_PREVIEW
    from turnkeeper.contracts.write_preview import MAX_SAID_CHARS, WritePreview, WritePreviewInput
    from turnkeeper.workflows.activity_calls import CarryOn, execute
    from turnkeeper.workflows.fleet import fairness as tenant_fairness
    from turnkeeper.workflows.turn_state import Turn

PREVIEW_TIMEOUT = timedelta(seconds=30)
# One retry, for a worker lost mid-read; the approver should not wait longer for a preview.
PREVIEW_RETRY = RetryPolicy(maximum_attempts=2)


def said_before(turn: Turn, use: ToolUseBlock) -> str | None:
    """The text of the answer that made `use` (its end, when long): the model's reason for the
    call as the approver reads it. None when the model wrote none."""
    for message in reversed(turn.messages):
        if message.role == "assistant" and any(u.id == use.id for u in message.tool_uses()):
            return message.text().strip()[-MAX_SAID_CHARS:] or None
    return None


async def write_preview(turn: Turn, use: ToolUseBlock) -> WritePreview | None:
    """The diff `use` would make, when it is a call of the worker's own `write_file`."""
    if not _previewed(turn, use):
        return None
    path, content = use.input["path"], use.input["content"]
    assert isinstance(path, str) and isinstance(content, str)
    options = workflow.ActivityConfig(
        start_to_close_timeout=PREVIEW_TIMEOUT,
        retry_policy=PREVIEW_RETRY,
        summary=f"preview of write_file {path}"[:200],
        priority=tenant_fairness.priority(turn.request),
    )
    failed = CarryOn[WritePreview | None](None, "write_file's preview failed: %s")
    return await execute(
        ACTIVITY_WRITE_PREVIEW,
        WritePreviewInput(path=path, content=content),
        failed,
        result_type=WritePreview,
        options=options,
    )


def _previewed(turn: Turn, use: ToolUseBlock) -> bool:
    """The workspace's own `write_file` (its traits say so; not an MCP server's, the caller's
    or another worker tool of that name), with text arguments.

    No `workflow.patched` guards this: the switch is the traits the first model call's result
    recorded, so a turn whose worker predates previews keeps its commands on replay, and no
    turn carries a marker for it. (A marker asked where a call begins to wait failed replays
    that reached that point a workflow task earlier than the run had.)"""
    traits = turn.tools.tool_traits.get(use.name)
    if traits is None or not traits.previews_write or use.name in turn.tools.mcp_tools:
        return False
    return isinstance(use.input.get("path"), str) and isinstance(use.input.get("content"), str)
