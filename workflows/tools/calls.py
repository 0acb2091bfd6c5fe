"""Settling the tool calls of one model response: each becomes exactly one `tool_result`,
whether it ran as an activity, waited for a human's decision, or waited for the caller."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.activity_io import ToolCallInput, ToolCallResult, ToolTraits
    from turnkeeper.contracts.approvals import SignedGrant
    from turnkeeper.contracts.mcp import McpCallInput
    from turnkeeper.contracts.messages import ToolResultBlock, ToolUseBlock
    from turnkeeper.contracts.names import ACTIVITY_TOOL_CALL
    from turnkeeper.contracts.result_limits import DEFAULT_MAX_RESULT_BYTES, capped
    from turnkeeper.contracts.signals import (
        ALL_PENDING,
        ApproveInput,
        DecisionRecord,
        PendingKind,
        SignedCall,
    )
    from turnkeeper.contracts.tool_validation import corrective_message, validation_problems
    from turnkeeper.contracts.waits import WAIT_SCHEMA, WAIT_TOOL
    from turnkeeper.contracts.write_preview import WritePreview
    from turnkeeper.workflows.activity_calls import AnswerModel, execute
    from turnkeeper.workflows.activity_options import (
        TOOL_CALL_TIMEOUT,
        TOOL_HEARTBEAT,
        TOOL_TIMEOUT_MARGIN,
    )
    from turnkeeper.workflows.approvals.pending import PendingCalls, Waiting
    from turnkeeper.workflows.approvals.standing import remember, standing_decision, standing_for
    from turnkeeper.workflows.failures import cause_message, fail
    from turnkeeper.workflows.fleet import fairness as tenant_fairness
    from turnkeeper.workflows.observation.turn_observer import TurnObserver
    from turnkeeper.workflows.policies import checks as policy_checks
    from turnkeeper.workflows.subagents.calls import TASK_SCHEMA, SubagentCalls, subagent_of
    from turnkeeper.workflows.tools import a2a as a2a_tools
    from turnkeeper.workflows.tools import mcp_tasks, sandbox, skills
    from turnkeeper.workflows.tools.approval_view import said_before, write_preview
    from turnkeeper.workflows.tools.mcp_elicitation import McpElicitations
    from turnkeeper.workflows.tools.retries import interrupted_call_text, tool_retry_policy
    from turnkeeper.workflows.turn_state import Settled, Turn
    from turnkeeper.workflows.waits import tool as wait_tool


# Before it, a call under an id the turn had seen took the earlier call's place in the book of
# waiting calls, where the earlier call's signed decision (still unexpired) approved it.
REUSED_CALL_IDS_PATCH = "reused-tool-call-ids-are-errors"


class ToolCalls:
    def __init__(self, pending: PendingCalls, observer: TurnObserver) -> None:
        self._pending = pending
        self._observer = observer
        self._subagents = SubagentCalls(pending, observer)
        self._subagent_share = 1  # sub-agent calls of the answer being settled side by side
        self.elicitations = McpElicitations(pending, observer)

    async def dispatch(
        self, turn: Turn, uses: list[ToolUseBlock], offered: list[str]
    ) -> list[Settled]:
        """Settles every call of one response; the results keep the call order. A call whose id
        the turn has seen already gets an error result and neither runs nor waits: a decision or
        result sent for the earlier call (a copy of it, too) would otherwise settle it."""
        # Asked only where an id repeats: the patch marker (and the SDK's TemporalChangeVersion
        # upsert that comes with it) then costs nothing to the turns whose ids are all new.
        reused = _reused(turn, uses)
        if reused and not workflow.patched(REUSED_CALL_IDS_PATCH):
            reused = set()  # a history from before the change replays the way it ran
        for position in sorted(reused):
            workflow.logger.warning(
                "tool call not run: its id was used already in this turn",
                extra={"call_id": uses[position].id, "tool": uses[position].name},
            )
        fresh = [use for position, use in enumerate(uses) if position not in reused]
        self._pending.expect(fresh)
        settled = await self._settle_fresh(turn, fresh, offered)
        return [
            Settled(_error(use, _reused_text(use))) if position in reused else settled[use.id]
            for position, use in enumerate(uses)
        ]

    async def _settle_fresh(
        self, turn: Turn, uses: list[ToolUseBlock], offered: list[str]
    ) -> dict[str, Settled]:
        """Settles calls whose ids are unique in the turn; their results by id."""
        settled: dict[str, Settled] = {}
        runnable: list[ToolUseBlock] = []
        for use in uses:
            problem = (
                self._unknown(use, offered)
                or self._invalid_arguments(turn, use)
                or skills.refusal(turn, use)
            )
            if problem:
                settled[use.id] = Settled(_error(use, problem))
            else:
                runnable.append(use)
        tier = max((_priority(turn, use) for use in runnable), default=0)
        now = [use for use in runnable if _priority(turn, use) == tier]
        for use in runnable:
            if use not in now:
                settled[use.id] = Settled(_error(use, _deferred_text(now)))
        asking = sorted({use.name for use in now if _needs_approval(turn, use)})
        standing = await standing_for(turn, asking)
        delegated = sum(1 for use in now if subagent_of(turn, use.name) is not None)
        parallel = turn.request.agent.parallel_tool_calls
        self._subagent_share = delegated if parallel else 1
        if parallel:
            results = await asyncio.gather(*(self.settle(turn, use, standing) for use in now))
        else:
            results = [await self.settle(turn, use, standing) for use in now]
        settled.update({use.id: result for use, result in zip(now, results, strict=True)})
        return settled

    def _unknown(self, use: ToolUseBlock, offered: list[str]) -> str | None:
        if use.name in offered:
            return None
        return f"Unknown tool {use.name!r}. Available tools: {', '.join(offered) or 'none'}."

    def _invalid_arguments(self, turn: Turn, use: ToolUseBlock) -> str | None:
        """A corrective message when the arguments do not fit the tool's schema; fails the turn
        once the correction budget is spent."""
        schema = schema_of(turn, use.name)
        problems = validation_problems(schema, use.input) if schema is not None else []
        if not problems:
            return None
        corrections = turn.spend.count_correction()
        allowed = turn.request.task.constraints.max_argument_corrections
        if corrections > allowed:
            fail(
                turn,
                errors.TOOL_ARGUMENTS_INVALID,
                f"the model sent arguments that do not fit the tool's schema {corrections} "
                f"times, more than max_argument_corrections={allowed}; the last call, to "
                f"{use.name!r}: " + "; ".join(problems),
            )
        return corrective_message(use.name, problems, allowed - corrections, schema=schema)

    async def settle(self, turn: Turn, use: ToolUseBlock, standing: set[str]) -> Settled:
        ruled = await policy_checks.check(turn, use, self._observer)  # None: no agent.policy
        if policy_checks.forbids(ruled):
            return Settled(_error(use, policy_checks.forbidden_text(ruled)))
        # A policy's "ask" waits for a person even where a standing approval covers the tool.
        asks = policy_checks.asks(ruled)
        if _needs_approval(turn, use) and use.name in standing and not asks:
            turn.approvals.record(standing_decision(use.id, use.name, signed=_keyed(turn)))
        elif _needs_approval(turn, use) or asks:
            decision, edited_input = await self._await_approval(turn, use)
            if not decision.approved:
                return Settled(_error(use, _rejection_text(decision)))
            if edited_input is not None:
                use = use.model_copy(update={"input": edited_input})
                # The approver's arguments are checked again; their approval stands for an ask.
                again = await policy_checks.check(turn, use, self._observer, edited=True)
                if policy_checks.forbids(again):
                    return Settled(_error(use, policy_checks.forbidden_text(again)))
                ran = await self._settle_approved(turn, use)
                return Settled(_edited(ran.result, decision, use))
        return await self._settle_approved(turn, use)

    async def _settle_approved(self, turn: Turn, use: ToolUseBlock) -> Settled:
        if wait_tool.is_wait_call(turn, use):
            return Settled(await wait_tool.wait(turn, use, self._pending.waits, self._observer))
        subagent = subagent_of(turn, use.name)
        if subagent is not None:
            return await self._subagents.run(turn, use, subagent, self._subagent_share)
        if any(tool.name == use.name for tool in turn.request.external_tools):
            return Settled(await self._await_external(turn, use))
        return await self._run(turn, use)

    async def _run(self, turn: Turn, use: ToolUseBlock) -> Settled:
        call = ToolCallInput(call_id=use.id, tool=use.name, input=use.input)
        turn.spend.count_tool_call()
        self._observer.tool_call_started(turn, use)
        traits = turn.tools.tool_traits.get(use.name)
        idempotent = traits.idempotent if traits else True
        mcp = use.name in turn.tools.mcp_tools
        summary = skills.summary(turn, use) or f"tool {use.name}{_argument_hint(use)}"

        def interrupted(err: ActivityError) -> str:
            return interrupted_call_text(use.name, idempotent, cause_message(err))

        told = AnswerModel(turn, interrupted)
        retry = tool_retry_policy(idempotent)
        if traits is not None and traits.local and not mcp:
            # Traits come from history (the first model call's result), so a tool that turns
            # local in a later release does not change the commands of a replayed turn.
            options = workflow.LocalActivityConfig(
                start_to_close_timeout=_tool_timeout(traits), retry_policy=retry, summary=summary
            )
            result = await execute(
                ACTIVITY_TOOL_CALL, call, told, result_type=ToolCallResult, local=options
            )
        else:
            options = workflow.ActivityConfig(
                start_to_close_timeout=_tool_timeout(traits),
                heartbeat_timeout=TOOL_HEARTBEAT,
                retry_policy=retry,
                summary=summary,
                priority=tenant_fairness.priority(turn.request),
            )
            if a2a_tools.is_a2a_call(turn, use.name):
                result = await a2a_tools.call(turn, use)
            elif sandbox.is_sandbox_call(turn, use.name):
                result = await sandbox.call(turn, use, told, options)
            elif mcp and mcp_tasks.may_answer_with_task(turn, use.name):
                # Only where the recorded listing allows tasks: other calls keep their commands.
                call_input = McpCallInput(call_id=use.id, name=use.name, input=use.input)
                follow = mcp_tasks.follow(
                    turn, use, call_input, told, options, self._observer, self.elicitations
                )
                result = await follow
            elif mcp:  # the server may ask a person for input before it answers
                result = await self.elicitations.call(turn, use, told, options)
            else:
                result = await execute(
                    ACTIVITY_TOOL_CALL, call, told, result_type=ToolCallResult, options=options
                )
        if isinstance(result, str):  # the call did not complete: the model is told so
            settled = _error(use, result)
            self._observer.tool_call_finished(turn, use, settled)
            return Settled(settled)
        block = ToolResultBlock(
            tool_use_id=use.id, content=result.result_content(), is_error=result.is_error
        )
        skills.note_result(turn, use, result.is_error)
        self._observer.tool_call_finished(turn, use, block)
        return Settled(block, result.block_ref)

    async def _await_approval(
        self, turn: Turn, use: ToolUseBlock
    ) -> tuple[DecisionRecord, dict[str, Any] | None]:
        """Waits for an `approve` signal or `decide` update; no decision in time is a rejection.
        Returns the decision and, when the approver edited the call, its new arguments."""
        edited_input = None
        timeout_s = turn.request.task.constraints.approval_timeout_s
        preview = await write_preview(turn, use)
        waiting = self._open(turn, use, "approval", preview)
        self._observer.approval_requested(turn, use)
        try:
            await workflow.wait_condition(lambda: waiting.settled, timeout=timeout_s)
            decision = waiting.decision
            assert decision is not None
            decided = _record(use, decision, signed=_keyed(turn))
            edited_input = decision.input if decision.approved else None
            if decision.approved and decision.remember:
                await remember(turn, decided, _grant(turn, decision, use))
        except TimeoutError:
            decided = DecisionRecord(
                call_id=use.id,
                tool=use.name,
                approved=False,
                reason="approval timed out",
                at=workflow.now(),
            )
        turn.approvals.record(decided)
        waited_s = (workflow.now() - waiting.since).total_seconds()
        self._observer.approval_decided(turn, decided, waited_s)
        self._close(turn, use)
        return decided, edited_input

    async def _await_external(self, turn: Turn, use: ToolUseBlock) -> ToolResultBlock:
        timeout_s = turn.request.task.constraints.approval_timeout_s
        waiting = self._open(turn, use, "external")
        try:
            await workflow.wait_condition(lambda: waiting.settled, timeout=timeout_s)
        except TimeoutError:
            self._close(turn, use)
            return _error(use, f"No result was submitted for {use.name!r} within {timeout_s:g} s.")
        submitted = waiting.result
        assert submitted is not None
        turn.spend.count_tool_call()
        self._close(turn, use)
        # The caller's output is capped like a worker tool's, so no payload limit can be blown.
        text = capped(_as_text(submitted.output), DEFAULT_MAX_RESULT_BYTES)
        block = ToolResultBlock(tool_use_id=use.id, content=text, is_error=submitted.is_error)
        self._observer.tool_call_finished(turn, use, block)
        return block

    def _open(
        self, turn: Turn, use: ToolUseBlock, kind: PendingKind, preview: WritePreview | None = None
    ) -> Waiting:
        said = said_before(turn, use)
        waiting = self._pending.open(use, kind, workflow.now(), said=said, preview=preview)
        turn.start_waiting(workflow.now())
        self._observer.call_waits(turn)
        return waiting

    def _close(self, turn: Turn, use: ToolUseBlock) -> None:
        self._pending.close(use.id)
        turn.stop_waiting(workflow.now())
        self._observer.call_waits(turn)


def _reused(turn: Turn, uses: list[ToolUseBlock]) -> set[int]:
    """The positions in `uses` (the last response's calls) of calls whose id an earlier call of
    the turn had: one of an earlier response, or an earlier one of this response. OpenAI-
    compatible servers and small models may number calls `call_0`, `call_1` in every answer."""
    seen = {use.id for message in turn.messages[:-1] for use in message.tool_uses()}
    reused = set()
    for position, use in enumerate(uses):
        if use.id in seen:
            reused.add(position)
        seen.add(use.id)
    return reused


def _reused_text(use: ToolUseBlock) -> str:
    return (
        f"Not run: the tool-call id {use.id!r} was used already by an earlier call in this "
        "turn, and a call needs an id of its own. Ask for the call again."
    )


def _needs_approval(turn: Turn, use: ToolUseBlock) -> bool:
    if skills.exempt_from_approval(turn, use.name) or wait_tool.is_wait_call(turn, use):
        return False  # the runtime's own tools: they read trusted text, or only wait
    constraints = turn.request.task.constraints
    return constraints.needs_approval(use.name) or use.name in turn.tools.declared_approval


def schema_of(turn: Turn, tool: str) -> dict[str, Any] | None:
    """The JSON schema a call to `tool` must fit, for worker and external tools alike."""
    for external in turn.request.external_tools:
        if external.name == tool:
            return external.input_schema
    if subagent_of(turn, tool) is not None:
        return TASK_SCHEMA
    if tool == WAIT_TOOL and wait_tool.offers_wait(turn.request):
        return WAIT_SCHEMA
    traits = turn.tools.tool_traits.get(tool)
    return traits.input_schema if traits else None


def _priority(turn: Turn, use: ToolUseBlock) -> int:
    traits = turn.tools.tool_traits.get(use.name)
    return traits.priority if traits else 0


def _deferred_text(running: list[ToolUseBlock]) -> str:
    names = ", ".join(sorted({use.name for use in running}))
    return (
        f"Not run yet: this response also asked for higher-priority tools ({names}), which run "
        f"first. Ask for this call again if you still need it."
    )


def _tool_timeout(traits: ToolTraits | None) -> timedelta:
    if traits is None:
        return TOOL_CALL_TIMEOUT
    return timedelta(seconds=traits.timeout_s) + TOOL_TIMEOUT_MARGIN


def _record(use: ToolUseBlock, decision: ApproveInput, signed: bool) -> DecisionRecord:
    return DecisionRecord(
        call_id=use.id,
        tool=use.name,
        approved=decision.approved,
        approver=decision.approver,
        reason=decision.reason,
        edited=decision.approved and decision.input is not None,
        signed=signed,
        at=workflow.now(),
    )


def _keyed(turn: Turn) -> bool:
    """Whether the turn's approvers have keys, so that every decision it applied was signed."""
    return bool(turn.request.agent.approver_keys())


def _grant(turn: Turn, decision: ApproveInput, use: ToolUseBlock) -> SignedGrant | None:
    """What a standing approval keeps of a verified signed decision on `use` (the call as the
    model sent it), so later keyed turns can verify it again. A signature that this turn did not
    verify is not passed on. A '*' decision signed no tool, so its grant names '*' and no later
    turn trusts it for one."""
    if not _keyed(turn):
        return None
    workflow_id, agent_id = workflow.info().workflow_id, turn.request.agent.id
    run = turn.approvals.signed_run_id
    if decision.call_id == ALL_PENDING:
        call = SignedCall(workflow_id, agent_id, ALL_PENDING, first_run_id=run)
    else:
        call = SignedCall(workflow_id, agent_id, use.name, use.input, run)
    return SignedGrant.of(decision, call, turn.approvals.signing_version)


def _rejection_text(decision: DecisionRecord) -> str:
    if decision.reason == "approval timed out" and not decision.approver:
        return "approval timed out"
    who = f" by {decision.approver}" if decision.approver else ""
    return f"The call was rejected{who}: {decision.reason or 'no reason given'}"


def _edited(block: ToolResultBlock, decision: DecisionRecord, ran: ToolUseBlock) -> ToolResultBlock:
    """Tells the model that the call it sees in its own message is not the one that ran."""
    who = f" by {decision.approver}" if decision.approver else ""
    arguments = json.dumps(ran.input, ensure_ascii=False)
    note = f"[This call was edited before approval{who}; it ran with the input {arguments}]\n"
    return block.model_copy(update={"content": note + block.text()})


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
