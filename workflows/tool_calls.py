"""Settling the tool calls of one model response: each becomes exactly one `tool_result`,
whether it ran as an activity, waited for a human's decision, or waited for the caller."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from contracts.activity_io import ToolCallInput, ToolCallResult
    from contracts.messages import ToolResultBlock, ToolUseBlock
    from contracts.names import ACTIVITY_TOOL_CALL
    from contracts.signals import PendingKind
    from workflows import turn_record as record
    from workflows.activity_options import TOOL_CALL_RETRY, TOOL_CALL_TIMEOUT
    from workflows.failures import cause_message
    from workflows.pending_calls import PendingCalls, Waiting
    from workflows.turn_state import Turn
    from workflows.turn_view import TurnView

Settled = tuple[ToolResultBlock, str | None]  # the result, and its content-store reference


class ToolCalls:
    def __init__(
        self, pending: PendingCalls, view: TurnView, on_change: Callable[[Turn], None]
    ) -> None:
        self._pending = pending
        self._view = view
        self._on_change = on_change

    async def settle(self, turn: Turn, use: ToolUseBlock, offered: list[str]) -> Settled:
        request = turn.request
        if use.name not in offered:
            known = ", ".join(offered) or "none"
            return _error(use, f"Unknown tool {use.name!r}. Available tools: {known}."), None
        if request.task.constraints.needs_approval(use.name) or use.name in turn.declared_approval:
            rejection = await self._await_approval(turn, use)
            if rejection is not None:
                return _error(use, rejection), None
        if any(tool.name == use.name for tool in request.external_tools):
            return await self._await_external(turn, use), None
        return await self._run(turn, use)

    async def _run(self, turn: Turn, use: ToolUseBlock) -> Settled:
        call = ToolCallInput(
            turn_id=workflow.info().workflow_id, call_id=use.id, tool=use.name, input=use.input
        )
        turn.tool_calls += 1
        self._view.event("tool_call_started", turn, call_id=use.id, tool=use.name, input=use.input)
        try:
            result = await workflow.execute_activity(
                ACTIVITY_TOOL_CALL,
                call,
                result_type=ToolCallResult,
                start_to_close_timeout=TOOL_CALL_TIMEOUT,
                retry_policy=TOOL_CALL_RETRY,
                summary=f"tool {use.name}{_argument_hint(use)}",
            )
        except ActivityError as err:
            if is_cancelled_exception(err):
                raise
            settled = _error(use, f"Tool {use.name!r} did not complete: {cause_message(err)}")
            self._finished(turn, use, settled)
            return settled, None
        block = ToolResultBlock(
            tool_use_id=use.id, content=result.content, is_error=result.is_error
        )
        self._finished(turn, use, block)
        return block, result.block_ref

    def _finished(self, turn: Turn, use: ToolUseBlock, block: ToolResultBlock) -> None:
        self._view.event(
            "tool_call_finished", turn, call_id=use.id, tool=use.name, is_error=block.is_error
        )

    async def _await_approval(self, turn: Turn, use: ToolUseBlock) -> str | None:
        """Waits for the `approve` signal; returns None when approved, else the reason."""
        timeout_s = turn.request.task.constraints.approval_timeout_s
        waiting = self._open(turn, use, "approval")
        record.approval_requested(use.id, use.name)
        self._view.event("approval_requested", turn, call_id=use.id, tool=use.name, input=use.input)
        try:
            await workflow.wait_condition(lambda: waiting.settled, timeout=timeout_s)
        except TimeoutError:
            self._decided(turn, use, False, "", "approval timed out")
            return self._close(turn, use, "approval timed out")
        decision = waiting.decision
        assert decision is not None
        self._decided(turn, use, decision.approved, decision.approver, decision.reason)
        if decision.approved:
            return self._close(turn, use, None)
        reason = decision.reason or "no reason given"
        who = f" by {decision.approver}" if decision.approver else ""
        return self._close(turn, use, f"The call was rejected{who}: {reason}")

    def _decided(
        self, turn: Turn, use: ToolUseBlock, approved: bool, approver: str, reason: str
    ) -> None:
        record.approval_decided(use.id, use.name, approved, approver, reason)
        self._view.event(
            "approval_decided",
            turn,
            call_id=use.id,
            tool=use.name,
            approved=approved,
            approver=approver,
            reason=reason,
        )

    async def _await_external(self, turn: Turn, use: ToolUseBlock) -> ToolResultBlock:
        timeout_s = turn.request.task.constraints.approval_timeout_s
        waiting = self._open(turn, use, "external")
        try:
            await workflow.wait_condition(lambda: waiting.settled, timeout=timeout_s)
        except TimeoutError:
            self._close(turn, use, None)
            return _error(use, f"No result was submitted for {use.name!r} within {timeout_s:g} s.")
        submitted = waiting.result
        assert submitted is not None
        turn.tool_calls += 1
        self._close(turn, use, None)
        block = ToolResultBlock(
            tool_use_id=use.id, content=_as_text(submitted.output), is_error=submitted.is_error
        )
        self._finished(turn, use, block)
        return block

    def _open(self, turn: Turn, use: ToolUseBlock, kind: PendingKind) -> Waiting:
        waiting = self._pending.open(use, kind, workflow.now())
        turn.human.start(workflow.now())
        self._on_change(turn)
        return waiting

    def _close(self, turn: Turn, use: ToolUseBlock, outcome: str | None) -> str | None:
        self._pending.close(use.id)
        turn.human.stop(workflow.now())
        self._on_change(turn)
        return outcome


def _error(use: ToolUseBlock, text: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=use.id, content=text, is_error=True)


def _as_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False)


def _argument_hint(use: ToolUseBlock) -> str:
    for key in ("path", "pattern", "query", "name"):
        value = use.input.get(key)
        if isinstance(value, str) and value:
            return f" · {value[:60]}"
    return ""
