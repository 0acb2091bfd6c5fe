"""`AgentTurnWorkflow`: one agent turn as a durable tool loop.

Each iteration checks the budgets, calls the model (an activity), and when the model asks for
tools settles every call (runs it as an activity, or first waits for a human approval or a
caller's result) and feeds the results back in call order. Waiting holds no activity open: a
turn parked on an approval is only a timer and a condition in workflow state.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any, NoReturn

from temporalio import workflow
from temporalio.common import RawValue, SearchAttributeKey, SearchAttributePair
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    FailureError,
    is_cancelled_exception,
)
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from contracts import errors
    from contracts.activity_io import (
        CallContext,
        ConversationDelta,
        ModelCallInput,
        ModelCallResult,
        ToolCallInput,
        ToolCallResult,
    )
    from contracts.messages import Message, ToolResultBlock, ToolUseBlock
    from contracts.names import (
        ACTIVITY_MODEL_CALL,
        ACTIVITY_TOOL_CALL,
        QUERY_STATUS,
        QUERY_TRANSCRIPT,
        SA_AGENT_ID,
        SA_COST_USD,
        SA_TASK_ID,
        SA_TURN_STATE,
        SIGNAL_APPROVE,
        SIGNAL_SUBMIT_TOOL_RESULT,
        WORKFLOW_TYPE,
    )
    from contracts.signals import ApproveInput, SubmitToolResultInput, TurnStatus
    from contracts.turn import AgentReport, TurnRequest, split_model
    from workflows import turn_record as record
    from workflows.activity_options import (
        MODEL_CALL_HEARTBEAT,
        MODEL_CALL_RETRY,
        MODEL_CALL_TIMEOUT,
        TOOL_CALL_RETRY,
        TOOL_CALL_TIMEOUT,
    )
    from workflows.pending_calls import PendingCalls
    from workflows.request_checks import offered_tools, request_problem
    from workflows.turn_state import Turn

AGENT_ID = SearchAttributeKey.for_keyword(SA_AGENT_ID)
TASK_ID = SearchAttributeKey.for_keyword(SA_TASK_ID)
TURN_STATE = SearchAttributeKey.for_keyword(SA_TURN_STATE)
COST_USD = SearchAttributeKey.for_float(SA_COST_USD)


@workflow.defn(name=WORKFLOW_TYPE)
class AgentTurnWorkflow:
    def __init__(self) -> None:
        self._turn: Turn | None = None
        self._pending = PendingCalls()
        self._offered: list[str] = []
        self._published_state = ""
        self._published_cost = -1.0
        self._early_failure: ApplicationError | None = None

    # ---- the loop -------------------------------------------------------------------------

    @workflow.run
    async def run(self, request: RawValue) -> AgentReport:
        try:
            turn = self._begin(request)
        except ApplicationError as err:
            self._early_failure = err
            report = AgentReport.model_validate(err.details[0])
            record.turn_failed(report, err.type or "", err.message)
            record.turn_completed(report, err.type)
            raise
        try:
            report = await self._loop(turn)
        except ApplicationError as err:
            self._finish(turn, "failed")
            record.turn_completed(turn.report("failed", workflow.now()), err.type)
            raise
        except BaseException as err:
            # A cancellation reaches us as asyncio's or, from an activity in flight, as an
            # ActivityError whose cause is a CancelledError; either way cancel wins.
            if is_cancelled_exception(err):
                self._finish(turn, "cancelled")
                record.turn_completed(turn.report("cancelled", workflow.now()))
            raise
        self._finish(turn, "completed")
        record.turn_completed(report)
        return report

    async def _loop(self, turn: Turn) -> AgentReport:
        agent = turn.request.agent
        while turn.iteration < agent.max_iterations:
            turn.iteration += 1
            self._check_budgets(turn)
            result = await self._call_model(turn)
            turn.record_model_call(result)
            self._publish(turn)
            uses = result.message.tool_uses()
            if result.stop_reason == "max_tokens":
                return turn.report("max_tokens", workflow.now())
            if not uses:
                return turn.report("completed", workflow.now())
            self._check_autonomy(turn, uses)
            turn.tool_interactions += 1
            results = await asyncio.gather(*(self._settle(turn, use) for use in uses))
            turn.record_tool_results(list(results))
        self._fail(
            turn,
            errors.MAX_ITERATIONS_EXCEEDED,
            f"the turn reached max_iterations={agent.max_iterations} and the model still "
            f"asked for tools ({turn.llm_calls} model calls, {turn.tool_calls} tool calls)",
        )

    def _begin(self, raw: RawValue) -> Turn:
        payload: Any = workflow.payload_converter().from_payload(raw.payload)
        try:
            request = TurnRequest.model_validate(payload)
        except ValidationError as err:
            raise _invalid_request(payload, _describe(err)) from None
        problem = request_problem(request)
        if problem:
            raise _invalid_request(payload, problem)
        turn = Turn.begin(request, workflow.now())
        self._turn = turn
        self._offered = offered_tools(request)
        workflow.upsert_search_attributes(
            [AGENT_ID.value_set(request.agent.id), TASK_ID.value_set(request.task.id)]
        )
        self._publish(turn)
        record.turn_started(request.agent.id, request.task.id, request.agent.model)
        return turn

    def _finish(self, turn: Turn, state: str) -> None:
        turn.state = state  # type: ignore[assignment]
        turn.ended = workflow.now()
        self._publish(turn)

    # ---- the model call -------------------------------------------------------------------

    async def _call_model(self, turn: Turn) -> ModelCallResult:
        """Calls the agent's model, then each fallback model once the one before is exhausted."""
        agent = turn.request.agent
        failures: list[str] = []
        for model in [agent.model, *agent.fallback_models]:
            try:
                return await self._call_model_resending(turn, model)
            except ActivityError as err:
                if is_cancelled_exception(err):
                    raise
                kind = _error_type(err)
                message = _cause_message(err)
                if kind in errors.LLM_REFUSALS or kind == errors.INVALID_TURN_REQUEST:
                    self._fail(turn, kind, message)
                if kind == errors.LLM_PAYLOAD_REJECTED:
                    self._fail(turn, errors.LLM_INVALID_REQUEST, message)
                if kind == errors.TURN_BUDGET_EXCEEDED:
                    self._fail_cost_budget(turn, message)
                if isinstance(err.cause, TemporalTimeoutError) and self._time_left_ms(turn) <= 0:
                    self._fail_time_budget(turn)
                workflow.logger.warning("model %s exhausted: %s", model, message)
                failures.append(f"{model}: {message}")
        self._fail(
            turn,
            errors.LLM_UNAVAILABLE,
            f"no model answered after retries ({len(failures)} tried): " + "; ".join(failures),
        )

    async def _call_model_resending(self, turn: Turn, model: str) -> ModelCallResult:
        try:
            return await self._model_activity(turn, model)
        except ActivityError as err:
            if _error_type(err) != errors.CONTENT_MISSING:
                raise
            workflow.logger.warning("the content store lost the conversation; resending it")
            turn.resend_everything()
            return await self._model_activity(turn, model)

    async def _model_activity(self, turn: Turn, model: str) -> ModelCallResult:
        request = turn.request
        tools = self._offered if self._tool_interactions_left(turn) else []
        context = None
        if turn.context_ref is None:
            context = CallContext(
                system_prompt=request.agent.system_prompt, external_tools=request.external_tools
            )
        call = ModelCallInput(
            turn_id=workflow.info().workflow_id,
            iteration=turn.iteration,
            model=model,
            max_tokens=request.agent.max_tokens,
            price=request.agent.price if model == request.agent.model else None,
            context_ref=turn.context_ref,
            context=context,
            offered_tools=tools,
            conversation=ConversationDelta(base=turn.conversation_ref, append=turn.unsent),
            cost_budget_left_usd=self._cost_left(turn),
        )
        timeout = self._model_timeout(turn)
        return await workflow.execute_activity(
            ACTIVITY_MODEL_CALL,
            call,
            result_type=ModelCallResult,
            # With a time budget, retries too must end when the budget does.
            schedule_to_close_timeout=timeout if self._has_time_budget(turn) else None,
            start_to_close_timeout=timeout,
            heartbeat_timeout=MODEL_CALL_HEARTBEAT,
            retry_policy=MODEL_CALL_RETRY,
            summary=f"model call {turn.iteration} · {split_model(model)[1]}",
        )

    def _model_timeout(self, turn: Turn) -> timedelta:
        budget = turn.request.task.constraints.time_budget_ms
        if budget is None:
            return MODEL_CALL_TIMEOUT
        remaining = timedelta(milliseconds=budget - turn.active_ms(workflow.now()))
        return max(timedelta(milliseconds=1), min(MODEL_CALL_TIMEOUT, remaining))

    # ---- tool calls -----------------------------------------------------------------------

    async def _settle(self, turn: Turn, use: ToolUseBlock) -> tuple[ToolResultBlock, str | None]:
        """Settles one tool call into its result block (and the block's store reference)."""
        request = turn.request
        if use.name not in self._offered:
            known = ", ".join(self._offered) or "none"
            text = f"Unknown tool {use.name!r}. Available tools: {known}."
            return _error_result(use, text), None
        if request.task.constraints.needs_approval(use.name) or use.name in turn.declared_approval:
            rejection = await self._await_approval(turn, use)
            if rejection is not None:
                return _error_result(use, rejection), None
        if any(tool.name == use.name for tool in request.external_tools):
            return await self._await_external(turn, use), None
        return await self._run_tool(turn, use)

    async def _run_tool(self, turn: Turn, use: ToolUseBlock) -> tuple[ToolResultBlock, str | None]:
        call = ToolCallInput(
            turn_id=workflow.info().workflow_id, call_id=use.id, tool=use.name, input=use.input
        )
        turn.tool_calls += 1
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
            text = f"Tool {use.name!r} did not complete: {_cause_message(err)}"
            return _error_result(use, text), None
        block = ToolResultBlock(
            tool_use_id=use.id, content=result.content, is_error=result.is_error
        )
        return block, result.block_ref

    async def _await_approval(self, turn: Turn, use: ToolUseBlock) -> str | None:
        """Waits for the `approve` signal; returns None when approved, else the reason."""
        timeout_s = turn.request.task.constraints.approval_timeout_s
        waiting = self._open_wait(turn, use, "approval")
        record.approval_requested(use.id, use.name)
        try:
            await workflow.wait_condition(lambda: waiting.settled, timeout=timeout_s)
        except TimeoutError:
            record.approval_decided(use.id, use.name, False, "", "approval timed out")
            return self._close_wait(turn, use, "approval timed out")
        decision = waiting.decision
        assert decision is not None
        record.approval_decided(
            use.id, use.name, decision.approved, decision.approver, decision.reason
        )
        if decision.approved:
            return self._close_wait(turn, use, None)
        reason = decision.reason or "no reason given"
        who = f" by {decision.approver}" if decision.approver else ""
        return self._close_wait(turn, use, f"The call was rejected{who}: {reason}")

    async def _await_external(self, turn: Turn, use: ToolUseBlock) -> ToolResultBlock:
        timeout_s = turn.request.task.constraints.approval_timeout_s
        waiting = self._open_wait(turn, use, "external")
        try:
            await workflow.wait_condition(lambda: waiting.settled, timeout=timeout_s)
        except TimeoutError:
            text = f"No result was submitted for {use.name!r} within {timeout_s:g} s."
            self._close_wait(turn, use, None)
            return _error_result(use, text)
        submitted = waiting.result
        assert submitted is not None
        turn.tool_calls += 1
        self._close_wait(turn, use, None)
        return ToolResultBlock(
            tool_use_id=use.id, content=_as_text(submitted.output), is_error=submitted.is_error
        )

    def _open_wait(self, turn: Turn, use: ToolUseBlock, kind: str) -> Any:
        waiting = self._pending.open(use, kind, workflow.now())  # type: ignore[arg-type]
        turn.human.start(workflow.now())
        self._publish(turn)
        return waiting

    def _close_wait(self, turn: Turn, use: ToolUseBlock, outcome: str | None) -> str | None:
        self._pending.close(use.id)
        turn.human.stop(workflow.now())
        self._publish(turn)
        return outcome

    # ---- signals and queries --------------------------------------------------------------

    @workflow.signal(name=SIGNAL_APPROVE)
    def approve(self, raw: RawValue) -> None:
        decision = self._signal_payload(raw, ApproveInput, SIGNAL_APPROVE)
        if decision is None:
            return
        problem = self._pending.why_not(decision.call_id, "approval")
        if problem:
            workflow.logger.warning(
                "approve signal ignored: %s", problem, extra={"call_id": decision.call_id}
            )
            return
        self._pending.decide(decision)

    @workflow.signal(name=SIGNAL_SUBMIT_TOOL_RESULT)
    def submit_tool_result(self, raw: RawValue) -> None:
        result = self._signal_payload(raw, SubmitToolResultInput, SIGNAL_SUBMIT_TOOL_RESULT)
        if result is None:
            return
        problem = self._pending.why_not(result.call_id, "external")
        if problem:
            workflow.logger.warning(
                "submit_tool_result signal ignored: %s", problem, extra={"call_id": result.call_id}
            )
            return
        self._pending.submit(result)

    @workflow.query(name=QUERY_STATUS)
    def status(self) -> TurnStatus:
        turn = self._turn
        if turn is None:
            return TurnStatus(state="failed" if self._early_failure else "running")
        return TurnStatus(
            state=turn.state,
            iteration=turn.iteration,
            llm_calls=turn.llm_calls,
            tool_calls=turn.tool_calls,
            cost_usd=round(turn.cost_usd, 10),
            elapsed_ms=turn.elapsed_ms(workflow.now()),
            pending=self._pending.listing(),
        )

    @workflow.query(name=QUERY_TRANSCRIPT)
    def transcript(self) -> list[Message]:
        return list(self._turn.messages) if self._turn is not None else []

    def _signal_payload(self, raw: RawValue, model: type[Any], name: str) -> Any:
        try:
            payload = workflow.payload_converter().from_payload(raw.payload)
            return model.model_validate(payload)
        except (ValidationError, ValueError, TypeError) as err:
            workflow.logger.warning("%s signal ignored: invalid payload: %s", name, err)
            return None

    # ---- budgets, policy, failure ---------------------------------------------------------

    def _check_budgets(self, turn: Turn) -> None:
        if self._time_left_ms(turn) <= 0:
            self._fail_time_budget(turn)
        left = self._cost_left(turn)
        if left is not None and left <= 0:
            self._fail_cost_budget(turn, f"after {turn.llm_calls} model calls")

    def _cost_left(self, turn: Turn) -> float | None:
        budget = turn.request.task.constraints.cost_budget_usd
        return None if budget is None else budget - turn.cost_usd

    def _fail_cost_budget(self, turn: Turn, detail: str) -> NoReturn:
        budget = turn.request.task.constraints.cost_budget_usd
        self._fail(
            turn,
            errors.TURN_BUDGET_EXCEEDED,
            f"cost budget of ${budget:g} spent: ${turn.cost_usd:.6f} so far; {detail}",
        )

    def _has_time_budget(self, turn: Turn) -> bool:
        return turn.request.task.constraints.time_budget_ms is not None

    def _time_left_ms(self, turn: Turn) -> float:
        budget = turn.request.task.constraints.time_budget_ms
        if budget is None:
            return float("inf")
        return budget - turn.active_ms(workflow.now())

    def _fail_time_budget(self, turn: Turn) -> NoReturn:
        budget = turn.request.task.constraints.time_budget_ms
        self._fail(
            turn,
            errors.TURN_BUDGET_EXCEEDED,
            f"time budget of {budget} ms spent: {turn.active_ms(workflow.now())} ms "
            f"(not counting {turn.human.waited_ms(workflow.now())} ms waiting for humans)",
        )

    def _tool_interactions_left(self, turn: Turn) -> bool:
        limit = turn.request.task.constraints.max_tool_interactions
        return limit is None or turn.tool_interactions < limit

    def _check_autonomy(self, turn: Turn, uses: list[ToolUseBlock]) -> None:
        request = turn.request
        known = set(request.agent.tools) | {tool.name for tool in request.external_tools}
        for use in uses:
            if use.name in known and use.name not in self._offered:
                self._fail(
                    turn,
                    errors.AUTONOMY_BOUNDARY_VIOLATION,
                    f"the model called {use.name!r}, which this task does not allow "
                    f"(allowed: {', '.join(self._offered) or 'none'})",
                )

    def _fail(self, turn: Turn, error_type: str, message: str) -> NoReturn:
        report = turn.report("failed", workflow.now())
        record.turn_failed(report, error_type, message)
        raise ApplicationError(message, report, type=error_type, non_retryable=True)

    def _publish(self, turn: Turn) -> None:
        """Keeps the turn's state and cost visible to visibility queries and the Web UI."""
        if turn.state in ("running", "awaiting_approval", "awaiting_external"):
            turn_state = self._pending.state()
        else:
            turn_state = turn.state
        pairs: list[SearchAttributePair[Any]] = []
        cost = round(turn.cost_usd, 6)
        if cost != self._published_cost:
            pairs.append(COST_USD.value_set(cost))
            self._published_cost = cost
        if turn_state != self._published_state:
            pairs.append(TURN_STATE.value_set(turn_state))
            self._published_state = turn_state
        if turn.state in ("running", "awaiting_approval", "awaiting_external"):
            turn.state = turn_state
        if pairs:
            workflow.upsert_search_attributes(pairs)


def _invalid_request(payload: Any, problem: str) -> ApplicationError:
    agent = payload.get("agent") if isinstance(payload, dict) else None
    task = payload.get("task") if isinstance(payload, dict) else None
    report = AgentReport(
        agent_id=str(agent.get("id", "")) if isinstance(agent, dict) else "",
        task_id=str(task.get("id", "")) if isinstance(task, dict) else "",
        outcome="failed",
    )
    return ApplicationError(
        f"invalid turn request: {problem}",
        report,
        type=errors.INVALID_TURN_REQUEST,
        non_retryable=True,
    )


def _describe(err: ValidationError) -> str:
    problems = []
    for item in err.errors():
        field = ".".join(str(part) for part in item["loc"]) or "request"
        problems.append(f"{field}: {item['msg']}")
    return "; ".join(problems)


def _cause_message(err: ActivityError) -> str:
    """The underlying failure's own message, without the "Type: " prefix of its str()."""
    cause = err.cause
    if isinstance(cause, TemporalTimeoutError):
        return f"timed out ({cause.type.name.lower() if cause.type else 'timeout'})"
    if isinstance(cause, FailureError):
        return cause.message
    return str(cause if cause is not None else err)


def _error_type(err: ActivityError) -> str | None:
    cause = err.cause
    return cause.type if isinstance(cause, ApplicationError) else None


def _error_result(use: ToolUseBlock, text: str) -> ToolResultBlock:
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
