"""The `tool_call` activity: runs one worker tool call and stores its `tool_result` block.

A tool failure is an answer for the model, not a failure of the activity: an unknown tool, a
refusal (`ToolError`), an exception or a timeout all become an `is_error` result, so Temporal
never retries a failure that would only repeat. Only cancellation and the content store's own
errors leave the activity.

Every result, errors included, is capped at `max_result_bytes` of UTF-8 (cut on a character
boundary, with a marker saying how much was shown), so no tool can blow Temporal's payload limit
or the model's context with one answer.
"""

from __future__ import annotations

import asyncio
import time
from typing import TypeVar

from temporalio import activity
from turnkeeper.activities.defects import defects_fail_once
from turnkeeper.activities.heartbeating import heartbeating
from turnkeeper.activities.observation.tracing import tool_span
from turnkeeper.activities.tools.image_results import ToolOutput, stored_images
from turnkeeper.activities.tools.registry import (
    ToolContext,
    ToolError,
    ToolRegistry,
    WorkerTool,
    run_tool,
)
from turnkeeper.activities.tools.results import stored_result
from turnkeeper.activities.turn_identity import bound_to_turn
from turnkeeper.contracts.activity_io import ToolCallInput, ToolCallResult
from turnkeeper.contracts.attachments import AttachmentBlock, AttachmentLimits
from turnkeeper.contracts.names import ACTIVITY_TOOL_CALL
from turnkeeper.contracts.result_limits import (
    DEFAULT_MAX_RESULT_BYTES,
    MAX_RESULT_BYTES,
    MIN_RESULT_BYTES,
    capped,
)

from turnkeeper.ground.logs import get_logger
from turnkeeper.payloads.attachments import AttachmentRefused
from turnkeeper.payloads.content_store import ContentStore

log = get_logger(__name__)

_Result = TypeVar("_Result")


class ToolActivities:
    """Activities over one worker's tools; register `tool_call` with the worker.

    Args:
        registry: the worker's tools.
        store: where each `tool_result` block is put.
        max_result_bytes: the cap on a result's UTF-8 size (`TURNKEEPER_MAX_TOOL_RESULT_BYTES`).
        attachment_limits: the size limits of a result's images (`TURNKEEPER_ATTACHMENT_…`).
    """

    def __init__(
        self,
        registry: ToolRegistry,
        store: ContentStore,
        *,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        attachment_limits: AttachmentLimits | None = None,
    ) -> None:
        if not MIN_RESULT_BYTES <= max_result_bytes <= MAX_RESULT_BYTES:
            raise ValueError(
                f"max_result_bytes must be between {MIN_RESULT_BYTES} and {MAX_RESULT_BYTES}, "
                f"got {max_result_bytes}"
            )
        self._registry = registry
        self._store = store
        self._max_result_bytes = max_result_bytes
        self._attachment_limits = attachment_limits or AttachmentLimits()

    @activity.defn(name=ACTIVITY_TOOL_CALL)
    async def tool_call(self, call: ToolCallInput) -> ToolCallResult:
        """Run `call` and put its `tool_result` block into the content store."""
        with defects_fail_once(ACTIVITY_TOOL_CALL):
            return await self._tool_call(bound_to_turn(call))

    async def _tool_call(self, call: ToolCallInput) -> ToolCallResult:
        started = time.monotonic()
        with tool_span(call.tool, call.input, call_id=call.call_id) as span:
            output, is_error = await heartbeating(self._outcome(call))
            text, images = await self._images_stored(output)
            is_error = is_error or (images is None)
            span.finished(is_error=is_error, output=text)
        text = capped(text, self._max_result_bytes)
        return await stored_result(
            self._store,
            turn_id=call.turn_id,
            call_id=call.call_id,
            tool=call.tool,
            text=text,
            is_error=is_error,
            started=started,
            attachments=images or [],
        )

    async def _images_stored(self, output: ToolOutput) -> tuple[str, list[AttachmentBlock] | None]:
        """The output's text and its images, stored; None for images that do not fit, whose
        text then says why."""
        if isinstance(output, str):
            return output, []
        try:
            return await stored_images(output, self._store, self._attachment_limits)
        except AttachmentRefused as err:
            return f"the tool's result cannot be shown to the model: {err}", None

    async def _outcome(self, call: ToolCallInput) -> tuple[ToolOutput, bool]:
        """The result text and whether it is an error; never raises but for cancellation."""
        tool = self._registry.get(call.tool)
        if tool is None:
            return f"unknown tool {call.tool!r}: this worker does not provide it", True
        try:
            return await _run_with_timeout(tool, call, _context(call)), False
        except ToolError as err:
            return str(err), True
        except _ToolTimedOut:
            return f"tool {tool.name} timed out after {tool.timeout_s:g} s", True
        except Exception as err:
            log.exception("tool_failed", tool=tool.name, call_id=call.call_id)
            return f"tool {tool.name} failed: {type(err).__name__}: {err}", True


class _ToolTimedOut(Exception):
    pass


def _context(call: ToolCallInput) -> ToolContext:
    return ToolContext(
        turn_id=call.turn_id,
        call_id=call.call_id,
        attempt=activity.info().attempt,
        loop=asyncio.get_running_loop(),
    )


async def _run_with_timeout(
    tool: WorkerTool, call: ToolCallInput, context: ToolContext
) -> ToolOutput:
    # A sync tool keeps running in its thread after the timeout (threads cannot be stopped);
    # only the answer to the model stops waiting for it.
    try:
        async with asyncio.timeout(tool.timeout_s) as scope:
            return await run_tool(tool, call.input, context)
    except TimeoutError:
        if scope.expired():
            raise _ToolTimedOut from None
        raise  # the tool's own TimeoutError (e.g. a network call) is an ordinary failure
