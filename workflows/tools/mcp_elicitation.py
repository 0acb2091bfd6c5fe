"""MCP servers that ask for input during a call: the turn waits for a person, as for an approval.

`McpElicitations.ask_person` is the one way in: it lists the server's question as a pending
call of kind `elicitation` (with the server's message and requested schema), stops the time
budget's clock, waits for `decide` (or `approval_timeout_s`, which cancels the question) and
returns the answer. Three paths use it:

- 2026-07-28 (`call`): the `mcp_call_tool` activity returns the server's `InputRequiredResult`
  instead of a result; the workflow asks the person, holding no connection and no activity,
  then runs the activity again with the answers and the server's `requestState`. A worker that
  restarts meanwhile loses nothing: the question is workflow state.
- Handshake era (`asked_during_call`, the `mcp_elicitation` update): the server asked on the
  call's session, so the activity must answer on it. It sends this update to its own workflow
  and waits for the result, heartbeating. A worker that dies meanwhile loses the session and the
  server's question with it: the call is retried (or the model told, for a tool that is not
  idempotent); a retry's identical question gets an answer already given, and a question of a
  dead attempt is replaced, never left listed.
- A durable MCP task in status `input_required` (activities poll it): its 2026-07-28 questions
  are asked with `ask_person` and answered with `tasks/update`; a 2025-11-25 task's come through
  the `mcp_elicitation` update during a `tasks/result` (workflows/tools/mcp_task_questions.py).

The call stays one tool call for the budgets; the time the person takes does not count.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.mcp import ACTIVITY_MCP_CALL_TOOL, McpCallInput
    from turnkeeper.contracts.mcp_elicitation import (
        ElicitationAnswer,
        ElicitationAsked,
        McpCallOutcome,
        McpElicitationInput,
        answer_of,
    )
    from turnkeeper.contracts.messages import ToolUseBlock
    from turnkeeper.contracts.signals import DecisionRecord
    from turnkeeper.workflows.activity_calls import OnFailure, execute
    from turnkeeper.workflows.approvals.pending import PendingCalls, Waiting
    from turnkeeper.workflows.observation.turn_observer import TurnObserver
    from turnkeeper.workflows.turn_state import Turn

# Before it, an MCP call's activity had no room in its start-to-close timeout for a person to
# answer the server mid-call (handshake era): it now has `approval_timeout_s` more.
MCP_ELICITATION_PATCH: Final = "mcp-calls-wait-for-people"
# As the MCP SDK's own driver: a server that keeps asking is given up on.
MAX_INPUT_ROUNDS: Final = 10
ELICITATION_TIMED_OUT: Final = "elicitation timed out"


@dataclass(frozen=True)
class _Given:
    """An answer given to a question of a call's attempt, kept until the call ends: a retried
    attempt (the worker died before the answer reached the server) that asks the same question
    gets it again instead of asking the person twice."""

    attempt: int
    asked: ElicitationAsked
    answer: ElicitationAnswer


class McpElicitations:
    """The questions of the turn's MCP servers; one per turn, beside its `ToolCalls`."""

    def __init__(self, pending: PendingCalls, observer: TurnObserver) -> None:
        self._pending = pending
        self._observer = observer
        self._given: dict[str, _Given] = {}

    async def ask_person(
        self, turn: Turn, use: ToolUseBlock, asked: ElicitationAsked, attempt: int = 0
    ) -> ElicitationAnswer:
        """Lists `asked` as a pending `elicitation` of the call `use`, waits for a `decide` (at
        most `approval_timeout_s`, then the question is cancelled) and returns the answer. The
        time budget's clock stops meanwhile. A question replaced by a later attempt's, or whose
        call ended, returns `cancel` to no one."""
        answer, _ = await self._ask(turn, use, asked, attempt)
        return answer

    async def _ask(
        self, turn: Turn, use: ToolUseBlock, asked: ElicitationAsked, attempt: int
    ) -> tuple[ElicitationAnswer, bool]:
        """`ask_person`'s answer, and whether it settled the question (a decision or the
        timeout) rather than being dropped (replaced, or its call ended)."""
        now = workflow.now()
        waiting = self._pending.open(use, "elicitation", now)
        waiting.asked, waiting.attempt = asked, attempt
        turn.start_waiting(now)
        self._observer.call_waits(turn)
        timeout_s = turn.request.task.constraints.approval_timeout_s
        try:
            await workflow.wait_condition(lambda: self._settled(waiting), timeout=timeout_s)
        except TimeoutError:
            self._record(turn, use, approved=False, reason=ELICITATION_TIMED_OUT)
            return self._finish(turn, waiting, ElicitationAnswer(action="cancel")), True
        decision = waiting.decision
        if decision is None:  # replaced or abandoned: nobody waits for this answer
            return self._finish(turn, waiting, ElicitationAnswer(action="cancel")), False
        self._record(turn, use, decision.approved, decision.reason, decision.approver)
        answer = answer_of(decision.approved, decision.reason, decision.input)
        return self._finish(turn, waiting, answer), True

    async def call(
        self,
        turn: Turn,
        use: ToolUseBlock,
        on_failure: OnFailure[str],
        options: workflow.ActivityConfig,
    ) -> McpCallOutcome | str:
        """Runs the MCP call `use` to its result, asking a person whenever the server answers
        with questions (2026-07-28) and calling again with the answers."""
        if workflow.patched(MCP_ELICITATION_PATCH):
            allowance = timedelta(seconds=turn.request.task.constraints.approval_timeout_s)
            options = {**options, "start_to_close_timeout": _timeout(options) + allowance}
        call = McpCallInput(call_id=use.id, name=use.name, input=use.input)
        try:
            for _ in range(MAX_INPUT_ROUNDS):
                outcome = await execute(
                    ACTIVITY_MCP_CALL_TOOL,
                    call,
                    on_failure,
                    result_type=McpCallOutcome,
                    options=options,
                )
                if isinstance(outcome, str) or outcome.input_required is None:
                    return outcome
                needed = outcome.input_required
                answers = {
                    asked.key: await self.ask_person(turn, use, asked) for asked in needed.asked
                }
                update = {"input_responses": answers, "request_state": needed.request_state}
                call = call.model_copy(update=update)
            return (
                f"MCP tool {use.name!r} asked for input more than {MAX_INPUT_ROUNDS} times; "
                "the call was given up"
            )
        finally:
            self.call_ended(turn, use.id)

    async def asked_during_call(self, turn: Turn, ask: McpElicitationInput) -> ElicitationAnswer:
        """The `mcp_elicitation` update: a handshake-era server asked during the call
        `ask.call_id`, whose activity waits for the answer."""
        given = self._given.get(ask.call_id)
        if given is not None and given.attempt < ask.attempt and given.asked == ask.asked:
            return given.answer  # asked again by a retry: the person answered it already
        use = _running_use(turn, ask.call_id)
        assert use is not None  # the validator checked it, in this same activation
        answer, settled = await self._ask(turn, use, ask.asked, ask.attempt)
        if settled:  # kept for a retry of the call, should this attempt die before it answers
            self._given[ask.call_id] = _Given(ask.attempt, ask.asked, answer)
        return answer

    def ask_problem(self, turn: Turn | None, ask: McpElicitationInput) -> str | None:
        """Why the `mcp_elicitation` update cannot be taken, or None."""
        if turn is None or turn.ended is not None:
            return "the turn is not running"
        use = _running_use(turn, ask.call_id)
        if use is None or use.name not in turn.tools.mcp_tools:
            return f"no MCP tool call {ask.call_id!r} runs in this turn"
        waiting = self._pending.get(ask.call_id)
        if waiting is not None and waiting.kind != "elicitation":
            return f"call {ask.call_id!r} waits for {waiting.kind}, it does not run"
        if waiting is not None and waiting.attempt > ask.attempt:
            return f"call {ask.call_id!r} has a later attempt than {ask.attempt}"
        return None

    def call_ended(self, turn: Turn, call_id: str) -> None:
        """The call's activity is done: a question it left open (its attempt died) is closed,
        and the answers kept for its retries are dropped."""
        self._given.pop(call_id, None)
        waiting = self._pending.get(call_id)
        if waiting is not None and waiting.kind == "elicitation" and not waiting.settled:
            self._pending.close(call_id)

    def _settled(self, waiting: Waiting) -> bool:
        return waiting.settled or self._pending.get(waiting.use.id) is not waiting

    def _finish(self, turn: Turn, waiting: Waiting, answer: ElicitationAnswer) -> ElicitationAnswer:
        if self._pending.get(waiting.use.id) is waiting:
            self._pending.close(waiting.use.id)
        turn.stop_waiting(workflow.now())
        self._observer.call_waits(turn)
        return answer

    def _record(
        self, turn: Turn, use: ToolUseBlock, approved: bool, reason: str, approver: str = ""
    ) -> None:
        signed = bool(turn.request.agent.approver_keys()) and bool(approver)
        turn.approvals.record(
            DecisionRecord(
                call_id=use.id,
                tool=use.name,
                approved=approved,
                approver=approver,
                reason=reason,
                edited=False,
                signed=signed,
                at=workflow.now(),
            )
        )


def _running_use(turn: Turn, call_id: str) -> ToolUseBlock | None:
    """The call `call_id` of the response whose calls are being settled, if it has one."""
    if not turn.messages or turn.messages[-1].role != "assistant":
        return None
    return next((use for use in turn.messages[-1].tool_uses() if use.id == call_id), None)


def _timeout(options: workflow.ActivityConfig) -> timedelta:
    timeout = options.get("start_to_close_timeout")
    return timeout if timeout is not None else timedelta(0)
