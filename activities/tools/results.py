"""The end of every tool call, worker or MCP: its `tool_result` block goes into the content store
(so the next model call gets it by reference), one `tool_call` event is logged (never the
arguments' or the output's text), and the activity's result is built."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from turnkeeper.contracts.activity_io import ToolCallResult, ToolOutcome, result_content
from turnkeeper.contracts.attachments import AttachmentBlock
from turnkeeper.contracts.messages import ToolResultBlock

from turnkeeper.ground.logs import get_logger
from turnkeeper.payloads.content_store import ContentStore

log = get_logger(__name__)


async def stored_result(
    store: ContentStore,
    *,
    turn_id: str,
    call_id: str,
    tool: str,
    text: str,
    is_error: bool,
    started: float,
    attachments: Sequence[AttachmentBlock] = (),
    **log_fields: Any,
) -> ToolCallResult:
    """`started` is the call's `time.monotonic()` start; `attachments` are the result's images,
    stored already; `log_fields` join the log event."""
    duration_ms = round((time.monotonic() - started) * 1000)
    content = result_content(text, list(attachments))
    block = ToolResultBlock(tool_use_id=call_id, content=content, is_error=is_error)
    block_ref = await store.put(block.model_dump_json().encode())
    outcome: ToolOutcome = "error" if is_error else "ok"
    log.info(
        "tool_call",
        tool=tool,
        call_id=call_id,
        turn_id=turn_id,
        duration_ms=duration_ms,
        outcome=outcome,
        **log_fields,
    )
    return ToolCallResult(
        block_ref=block_ref,
        is_error=is_error,
        content=text,
        duration_ms=duration_ms,
        attachments=list(attachments),
    )
