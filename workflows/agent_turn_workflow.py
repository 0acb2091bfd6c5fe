"""`AgentTurnWorkflow`: one agent turn as a durable tool loop.

Each iteration checks the budgets, calls the model (an activity), and when the model asks for
tools settles every call (runs it as an activity, or first waits for a human approval or a
caller's result) and feeds the results back in call order. Waiting holds no activity open: a
turn parked on an approval is only a timer and a condition in workflow state. A long turn
continues as new when Temporal suggests it, carrying its state; callers see one workflow id.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RawValue, VersioningBehavior
from temporalio.exceptions import ApplicationError, TemporalError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from temporalio.contrib.workflow_streams import WorkflowStream, WorkflowStreamState
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.activity_io import ModelCallResult
    from turnkeeper.contracts.budget_extension import ExtendBudgetInput, ExtendBudgetResult
    from turnkeeper.contracts.claim_check import ClaimChecked
    from turnkeeper.contracts.mcp_elicitation import (
        UPDATE_MCP_ELICITATION,
        ElicitationAnswer,
        McpElicitationInput,
    )
    from turnkeeper.contracts.messages import Message, ToolUseBlock
    from turnkeeper.contracts.names import (
        QUERY_DECISIONS,
        QUERY_STATUS,
        QUERY_TRANSCRIPT,
        SIGNAL_APPROVE,
        SIGNAL_SUBAGENT_CANCELLED,
        SIGNAL_SUBAGENT_PENDING,
        SIGNAL_SUBMIT_TOOL_RESULT,
        UPDATE_CANCEL,
        UPDATE_DECIDE,
        UPDATE_EXTEND_BUDGET,
        UPDATE_INTERRUPT,
        UPDATE_STEER,
        WORKFLOW_TYPE,
    )
    from turnkeeper.contracts.plaintext import refusal
    from turnkeeper.contracts.rate_limits import SIGNAL_CAPACITY_WAIT, CapacityWait
    from turnkeeper.contracts.request_checks import offered_tools
    from turnkeeper.contracts.search_attributes import STARTED_BY
    from turnkeeper.contracts.signals import (
        ALL_PENDING,
        ApproveInput,
        DecideResult,
        DecisionRecord,
        PendingCall,
        SubagentPending,
        SubmitToolResultInput,
        TurnState,
        TurnStatus,
    )
    from turnkeeper.contracts.steering import (
        CancelInput,
        CancelResult,
        InterruptInput,
        InterruptResult,
        SteerInput,
        SteerResult,
    )
    from turnkeeper.contracts.tenants import SIGNAL_TENANT_CAPS_CHANGED
    from turnkeeper.contracts.turn import AgentReport, SubagentCancelled
    from turnkeeper.contracts.waits import SIGNAL_EVENT, AgentEvent
    from turnkeeper.workflows.answer import structured_output
    from turnkeeper.workflows.answer import validation as output_validation
    from turnkeeper.workflows.approvals import decision_checks
    from turnkeeper.workflows.approvals import signatures as signed_decisions
    from turnkeeper.workflows.approvals.cancel import SignedCancels
    from turnkeeper.workflows.approvals.pending import PendingCalls
    from turnkeeper.workflows.approvals.steering import Interrupted, Steering, not_run
    from turnkeeper.workflows.attachments import first_sight as attachments
    from turnkeeper.workflows.budgets import checks as budgets
    from turnkeeper.workflows.budgets import extension as budget_extension
    from turnkeeper.workflows.failures import decision_refused, fail, internal_error_before_turn
    from turnkeeper.workflows.guardrails import checks as guardrail_checks
    from turnkeeper.workflows.inputs import handlers as inputs
    from turnkeeper.workflows.inputs.schedule_origin import scheduled_by
    from turnkeeper.workflows.llm import calls as model_calls
    from turnkeeper.workflows.llm import conversation_compaction
    from turnkeeper.workflows.observation import turn_tracing
    from turnkeeper.workflows.observation.turn_observer import TurnObserver
    from turnkeeper.workflows.observation.turn_view import TurnView
    from turnkeeper.workflows.subagents import relay as subagent_relay
    from turnkeeper.workflows.tools import a2a as a2a_tools
    from turnkeeper.workflows.tools import mcp as mcp_tools
    from turnkeeper.workflows.tools import skills
    from turnkeeper.workflows.tools.calls import ToolCalls
    from turnkeeper.workflows.turn_state import Settled, Turn, TurnProgress

_UPGRADE_ON_CONTINUE = workflow.ContinueAsNewVersioningBehavior.AUTO_UPGRADE

# Before it, a tool the model called after its tool interactions were spent (offered none) ran.
SPENT_TOOLS_PATCH = "spent-tool-interactions-run-nothing"


class CarriedTurn(BaseModel, ClaimChecked):
    """What a turn hands to its next run when it continues as new (the request travels as the
    first argument, so it is not carried twice)."""

    turn: TurnProgress
    stream: WorkflowStreamState | None = None


@workflow.defn(name=WORKFLOW_TYPE)
class AgentTurnWorkflow:
    # `request` is typed RawValue so that a payload that is not a TurnRequest fails the turn with
    # InvalidTurnRequest instead of failing workflow tasks forever. Temporal applies type hints
    # only when the number of payloads matches, so a first run (one payload) gets the decoded
    # JSON and a continued run (two payloads) gets a RawValue and the carried state as JSON.
    @workflow.init
    def __init__(self, request: RawValue, carried: Any = None) -> None:
        carried = inputs.carried(carried, CarriedTurn)
        self._turn: Turn | None = None
        self._pending = PendingCalls()
        self._offered: list[str] = []
        self._early_failure: ApplicationError | None = None
        # WorkflowStream must be built right here, in the workflow's @workflow.init.
        view = TurnView(WorkflowStream(carried.stream if carried else None))
        self._observer = TurnObserver(view, self._pending)
        self._tools = ToolCalls(self._pending, self._observer)
        self._budget = budget_extension.BudgetExtensions(self._observer)
        self._steering = Steering()
        self._cancels = SignedCancels(self._steering)

    # ---- the loop -------------------------------------------------------------------------

    @workflow.run
    async def run(self, request: RawValue, carried: Any = None) -> AgentReport:
        with turn_tracing.turn_span() as span:
            self._observer.watch(span)
            return await self._run(request, inputs.carried(carried, CarriedTurn))

    async def _run(self, request: RawValue, carried: CarriedTurn | None) -> AgentReport:
        observer = self._observer
        try:
            turn = self._begin(request, carried)
        except ApplicationError as err:
            self._early_failure = err
            report = AgentReport.model_validate(err.details[0])
            observer.request_refused(report, err.type or "", err.message)
            raise
        except Exception as err:
            if isinstance(err, TemporalError):
                raise
            # A defect before the loop (validating the request, resuming, the first record) ends
            # the turn as one inside it does; left alone it would fail workflow tasks forever,
            # and the turn would look alive while answering nothing.
            failure = internal_error_before_turn(inputs.payload_or_none(request), err)
            self._early_failure = failure
            report = AgentReport.model_validate(failure.details[0])
            observer.request_refused(report, errors.TURN_INTERNAL_ERROR, failure.message)
            raise failure from err
        observer.turn_described(turn)
        try:
            if carried is None:
                request = await attachments.store(turn, request)
                await output_validation.check_worker_has_them(turn)
                await guardrail_checks.check_input(turn, observer)
                await skills.describe(turn)
                await self._discover_mcp_tools(turn)
            report = await self._loop(turn, request)
            self._steering.finishing = True
            report = await conversation_compaction.keep_whole_conversation(turn, report)
        except Interrupted:
            return self._interrupted(turn)
        except ApplicationError as err:
            report = self._end(turn, "failed")
            observer.turn_failed(turn, report, err.type or "", err.message)
            raise
        except BaseException as err:
            # A cancellation reaches us as asyncio's or, from an activity in flight, as an
            # ActivityError whose cause is a CancelledError; either way cancel wins.
            if is_cancelled_exception(err):
                partial = self._end(turn, "cancelled")
                observer.turn_cancelled(turn, partial)
                await subagent_relay.tell_parent_cancelled(turn, partial)
                await self._cancels.settled()
                raise
            if not isinstance(err, Exception) or isinstance(err, TemporalError):
                raise  # continue-as-new, or the SDK's own errors
            # A defect of ours would otherwise fail workflow tasks forever and hang the turn.
            partial = self._end(turn, "failed")
            observer.turn_broke(turn, partial, errors.TURN_INTERNAL_ERROR)
            raise ApplicationError(
                f"internal error in the turn: {type(err).__name__}: {err}",
                partial,
                type=errors.TURN_INTERNAL_ERROR,
                non_retryable=True,
            ) from err
        turn.end("completed", workflow.now())
        observer.turn_completed(turn, report)
        return report

    def _interrupted(self, turn: Turn) -> AgentReport:
        """Ends an interrupted turn at its safe point: the report so far, outcome
        `interrupted`."""
        self._steering.finishing = True
        now = workflow.now()
        turn.stop_every_wait(now)
        turn.end("interrupted", now)
        self._pending.abandon()
        report = turn.report("interrupted", now)
        interrupt = self._steering.interrupt
        assert interrupt is not None
        self._observer.turn_interrupted(turn, report, interrupt)
        return report

    def _end(self, turn: Turn, state: TurnState) -> AgentReport:
        """Ends a turn that did not complete; its partial report."""
        turn.end(state, workflow.now())
        self._pending.abandon()
        return turn.report("cancelled" if state == "cancelled" else "failed", workflow.now())

    async def _loop(self, turn: Turn, request: RawValue) -> AgentReport:
        while True:
            report = await self._iterate(turn, request)
            if report is not None:
                return report
            # A pausing turn waits here for more iterations; any other fails.
            await self._steering.interruptible(
                self._budget.checking(turn, budgets.check_iterations)
            )

    async def _iterate(self, turn: Turn, request: RawValue) -> AgentReport | None:
        """Iterates until the model answers (its report) or the iterations run out (None)."""
        steering = self._steering
        while turn.iteration < budgets.iteration_limit(turn):
            steering.check()
            if turn.iteration > 0 and workflow.info().is_continue_as_new_suggested():
                await self._continue_as_new(turn, request)
            turn.begin_iteration()
            # A spent budget fails the turn, or with `on_budget_exhausted: "pause"` waits for a
            # human to extend it.
            await steering.interruptible(self._budget.checking(turn, budgets.check_before_call))
            self._observer.iteration_started(turn)
            result = await self._call_model(turn)
            turn.record_model_call(result)
            self._observer.model_call_finished(turn, result)
            uses = result.message.tool_uses()
            steering.stop_before_tools(turn, uses)
            if not uses and turn.steers.queued_steers:
                continue  # a steer came during the call: the model reads it before it ends
            if result.stop_reason == "max_tokens":
                await guardrail_checks.check_answer(turn, self._observer)
                return turn.report("max_tokens", workflow.now())
            if not uses:
                if await self._sent_back_for_correction(turn):
                    continue
                await guardrail_checks.check_answer(turn, self._observer)
                return turn.report("completed", workflow.now())
            self._check_autonomy(turn, uses)
            offered = self._offered_to_last_call(turn)
            turn.spend.begin_tool_interaction()
            settled = await steering.interruptible(self._dispatch(turn, uses, offered))
            settled = await guardrail_checks.check_tool_results(turn, self._observer, uses, settled)
            turn.record_tool_results(settled)
        return None

    async def _dispatch(
        self, turn: Turn, uses: list[ToolUseBlock], offered: list[str]
    ) -> list[Settled]:
        """Settles the calls; an interrupt cancels what still runs or waits, and every call
        gets a result (one saying so where the interrupt stopped it)."""
        try:
            return await self._tools.dispatch(turn, uses, offered)
        except BaseException as err:
            if self._steering.interrupt is not None and is_cancelled_exception(err):
                turn.record_tool_results([Settled(not_run(use)) for use in uses])
            raise

    async def _call_model(self, turn: Turn) -> ModelCallResult:
        """The model call; a pausing turn whose call was refused for its budget waits for an
        extension and calls again."""
        result = await self._steering.interruptible(
            self._budget.retrying(turn, lambda: self._steered_call(turn)),
            # A call in flight is finished and billed; only a wait for a budget is cut short.
            cancellable=lambda: turn.budget.budget_request is not None,
        )
        # Only a tool-interaction budget lets the turn go on unextended, and no call spends it.
        assert result is not None
        return result

    async def _steered_call(self, turn: Turn) -> ModelCallResult:
        """The model call, with the steers queued so far in its conversation."""
        for steer in turn.deliver_steers():
            self._observer.steered(turn, steer)
        self._steering.called_in = turn.iteration
        try:
            return await model_calls.call(turn, self._offered, self._observer)
        except budgets.BudgetExhausted:
            self._steering.called_in = turn.iteration - 1  # not called: it waits for a budget
            raise

    def _begin(self, raw: RawValue | Any, carried: CarriedTurn | None) -> Turn:
        # Before anything else: no model, tool or store hears of a request the worker refuses.
        request = inputs.turn_request(raw, first_run=carried is None)
        self._offered = offered_tools(request)
        if carried is not None:
            turn = Turn.resume(request, carried.turn, schedule=scheduled_by(workflow.info()))
            self._verify_signatures(turn)
            self._offered = self._offer(turn)
            self._steering.resumed(turn)
            self._turn = turn
            self._observer.turn_resumed(turn)
            return turn
        # From the start event, where the client that started the turn set it: whom it belongs to.
        started_by = workflow.info().typed_search_attributes.get(STARTED_BY)
        turn = Turn.begin(
            request, workflow.now(), started_by=started_by, schedule=scheduled_by(workflow.info())
        )
        # Here, not where a decision is checked: the `decide` validator may not ask for a patch.
        self._verify_signatures(turn)
        self._turn = turn
        self._observer.turn_started(turn)
        return turn

    def _verify_signatures(self, turn: Turn) -> None:
        """Fixes the signing format this run verifies, and the run id it binds."""
        version = signed_decisions.signing_version(turn.request.agent)
        turn.approvals.verify_signatures_as(version, signed_decisions.signed_run_id(version))

    async def _continue_as_new(self, turn: Turn, request: RawValue) -> None:
        self._observer.continuing_as_new(turn)
        # The stream's own continue_as_new recipe, spelled out to pass the versioning behaviour:
        # the next run starts on the deployment's current version (AUTO_UPGRADE for its first
        # task, PINNED again after it), so a week-long turn does not hold an old build forever.
        # Only on a versioned worker: the server refuses the behaviour from an unversioned one.
        versioned = workflow.info().get_current_deployment_version() is not None
        stream = self._observer.view.stream
        stream.detach_pollers()
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(
            args=[request, CarriedTurn(turn=turn.progress(), stream=stream.get_state())],
            initial_versioning_behavior=_UPGRADE_ON_CONTINUE if versioned else None,
        )

    async def _discover_mcp_tools(self, turn: Turn) -> None:
        await mcp_tools.discover(turn)
        await a2a_tools.describe(turn)
        self._offered = self._offer(turn)

    def _offer(self, turn: Turn) -> list[str]:
        """The tools model calls offer: the request's (`offered_tools`), MCP entries expanded to
        the tools discovered, then what the agent's skills bring."""
        names = mcp_tools.expand(offered_tools(turn.request), turn.tools.mcp_tools)
        names = a2a_tools.offered(names, turn)
        return skills.offered(names, turn.tools.skills, turn.request.task.constraints.allowed_tools)

    async def _sent_back_for_correction(self, turn: Turn) -> bool:
        """Checks the final answer against the output schema, then the output validators:
        keeps it (False), or sends it back to the model with a correction (True)."""
        schema = turn.request.agent.output_schema
        value = None
        if schema is not None:
            value, correction = structured_output.structured_answer(
                turn.messages[-1].text(), schema
            )
            if correction is not None:
                turn.send_back(correction, "it does not fit output_schema")
                return True
        rejected = await output_validation.rejection(turn, value)
        if rejected is not None:
            turn.send_back(*rejected)
            return True
        if schema is not None:
            turn.keep_structured_output(value)
        return False

    def _offered_to_last_call(self, turn: Turn) -> list[str]:
        """The tools the last model call was given: none once the tool interactions are spent,
        so a model that calls one anyway gets an unknown-tool answer and the tool never runs."""
        if budgets.tool_interactions_left(turn) or not workflow.patched(SPENT_TOOLS_PATCH):
            return self._offered
        return []

    def _check_autonomy(self, turn: Turn, uses: list[ToolUseBlock]) -> None:
        request = turn.request
        known = set(request.agent.tools) | {tool.name for tool in request.external_tools}
        known |= set(turn.tools.mcp_tools) | {spec.name for spec in request.agent.subagents}
        known |= set(turn.tools.a2a_agents)
        known |= skills.tool_names(turn)
        for use in uses:
            if use.name in known and use.name not in self._offered:
                fail(
                    turn,
                    errors.AUTONOMY_BOUNDARY_VIOLATION,
                    f"the model called {use.name!r}, which this task does not allow "
                    f"(allowed: {', '.join(self._offered) or 'none'})",
                )

    # ---- signals and queries --------------------------------------------------------------

    @workflow.signal(name=SIGNAL_APPROVE)
    def approve(self, raw: RawValue) -> None:
        if self._ignored_unencrypted(raw, SIGNAL_APPROVE):
            return
        decision = inputs.approve_input(raw)
        if not isinstance(decision, ApproveInput):
            (call_id, approver), problem = decision
            self._refuse(call_id, approver, problem)
            return
        relayed = self._pending.relayed(decision.call_id)
        if relayed is not None:  # a sub-agent's call: decided (and checked) where it waits
            self._observer.parent.forward(relayed, decision)
            return
        problem = self._decision_problem(decision)
        if problem:
            self._refuse(decision.call_id, decision.approver, problem)
            return
        self._apply(decision)

    def _apply(self, decision: ApproveInput) -> set[str]:
        """Settles the calls `decision` names; their ids."""
        decided = {waiting.use.id for waiting in self._pending.decide(decision)}
        turn = self._turn
        # A keyed turn verified the signature before applying it; others ignore signatures.
        if turn and turn.request.agent.approver_keys() and decision.call_id == ALL_PENDING:
            call = decision_checks.signed_call(turn, self._pending, decision)
            turn.approvals.spend_star(
                signed_decisions.spent_key(decision, call, turn.approvals.signing_version)
            )
        return decided

    def _refuse(
        self, call_id: str, approver: str, problem: str, signal: str = SIGNAL_APPROVE
    ) -> None:
        """Logs an ignored signal and keeps it for the status query, the only answer a signal's
        sender can read."""
        workflow.logger.warning(
            "%s signal ignored: %s",
            signal,
            problem,
            extra={"call_id": call_id, "approver": approver},
        )
        if self._turn is not None:
            self._turn.approvals.refuse(call_id, approver, problem, workflow.now(), signal)

    def _ignored_unencrypted(self, raw: RawValue, signal: str) -> bool:
        """Ignores (logs and lists) a signal that arrived unencrypted where the worker requires
        encryption; whether it did."""
        sender = inputs.unencrypted_sender(raw)
        if sender is None:
            return False
        self._refuse(sender.call_id, sender.approver, refusal(f"the {signal} signal"), signal)
        return True

    @workflow.update(name=UPDATE_DECIDE)
    async def decide(self, raw: RawValue) -> DecideResult:
        decision = inputs.parsed(raw, ApproveInput, "decision")
        relayed = self._pending.relayed(decision.call_id)
        if relayed is not None:
            return await self._decide_below(relayed, decision)
        before = len(self._decisions())
        decided = self._apply(decision)
        # Wait until the turn has recorded them, so the result is the decision as applied (only
        # records from now on: a call's approval comes before its server's question's answer).
        await workflow.wait_condition(lambda: decided <= self._recorded_decisions(before))
        return DecideResult(
            decisions=[d for d in self._decisions()[before:] if d.call_id in decided],
        )

    async def _decide_below(self, call: PendingCall, decision: ApproveInput) -> DecideResult:
        """Sends a decision on a sub-agent's call to the turn where it waits, and answers once
        that turn no longer lists the call (it applied it, or it refused it: then it says why
        in its status's `refused_decisions`)."""
        self._observer.parent.forward(call, decision)
        try:
            await workflow.wait_condition(
                lambda: self._pending.relayed(call.call_id) is None,
                timeout=subagent_relay.DECIDE_BELOW_TIMEOUT,
            )
        except TimeoutError:
            raise ApplicationError(
                f"the sub-agent's turn {call.workflow_id} did not apply the decision on "
                f"{call.call_id!r}; its status query lists why under refused_decisions",
                non_retryable=True,
            ) from None
        return DecideResult(decisions=[subagent_relay.record_of(call, decision, workflow.now())])

    @decide.validator
    def _validate_decide(self, raw: RawValue) -> None:
        decision = inputs.update_input(
            raw, ApproveInput, "decision", UPDATE_DECIDE, decision_refused
        )
        if self._pending.relayed(decision.call_id) is not None:
            return  # checked where the call waits, as its turn's approvers and keys say
        problem = self._decision_problem(decision)
        if problem:
            raise decision_refused(problem)

    def _decision_problem(self, decision: ApproveInput) -> str | None:
        return decision_checks.decision_problem(self._turn, self._pending, decision)

    def _decisions(self) -> list[DecisionRecord]:
        return list(self._turn.approvals.decisions) if self._turn else []

    def _recorded_decisions(self, since: int = 0) -> set[str]:
        return {d.call_id for d in self._decisions()[since:]}

    @workflow.update(name=UPDATE_MCP_ELICITATION)
    async def mcp_elicitation(self, raw: RawValue) -> ElicitationAnswer:
        """From an MCP call's own activity: its server asked a question mid-call (handshake
        era); the answer once a person gave it (workflows/tools/mcp_elicitation.py)."""
        ask = inputs.parsed(raw, McpElicitationInput, "question")
        # Checked again: an earlier update of this activation may have changed the call.
        problem = self._tools.elicitations.ask_problem(self._turn, ask)
        if self._turn is None or problem:
            raise ApplicationError(problem or "the turn has not begun", non_retryable=True)
        return await self._tools.elicitations.asked_during_call(self._turn, ask)

    @mcp_elicitation.validator
    def _validate_mcp_elicitation(self, raw: RawValue) -> None:
        ask = inputs.update_input(raw, McpElicitationInput, "question", UPDATE_MCP_ELICITATION)
        problem = self._tools.elicitations.ask_problem(self._turn, ask)
        if problem:
            raise ValueError(problem)

    @workflow.update(name=UPDATE_EXTEND_BUDGET)
    async def extend_budget(self, raw: RawValue) -> ExtendBudgetResult:
        extension = inputs.parsed(raw, ExtendBudgetInput, "extension")
        turn = self._turn
        # The validator ran in this same activation, but an earlier update of it may have
        # answered the request already.
        problem = self._extension_problem(extension)
        if turn is None or problem:
            raise ApplicationError(problem or "the turn has not begun", non_retryable=True)
        granted = turn.grant_extension(
            extension, bool(turn.request.agent.approver_keys()), workflow.now()
        )
        return ExtendBudgetResult(extension=granted, limits=budgets.limits(turn))

    @extend_budget.validator
    def _validate_extend_budget(self, raw: RawValue) -> None:
        extension = inputs.update_input(
            raw, ExtendBudgetInput, "extension", UPDATE_EXTEND_BUDGET, decision_refused
        )
        problem = self._extension_problem(extension)
        if problem:
            raise decision_refused(problem)

    def _extension_problem(self, extension: ExtendBudgetInput) -> str | None:
        if self._turn is None:
            return "the turn has not begun"
        workflow_id = workflow.info().workflow_id
        return budget_extension.extension_problem(self._turn, extension, workflow_id)

    @workflow.update(name=UPDATE_STEER)
    def steer(self, raw: RawValue) -> SteerResult:
        steer = inputs.parsed(raw, SteerInput, "steer")
        turn = self._turn
        # Checked again: an earlier update of this activation may have ended or interrupted it.
        problem = self._steering.problem(turn, steer)
        if turn is None or problem:
            raise ApplicationError(problem or "the turn has not begun", non_retryable=True)
        # A `wait` in progress ends: the model reads the steer with the wait's result.
        self._pending.waits.wake(f"a steer from {steer.author or 'someone'}")
        return self._steering.steer(turn, steer, workflow.now())

    @steer.validator
    def _validate_steer(self, raw: RawValue) -> None:
        steer = inputs.update_input(raw, SteerInput, "steer", UPDATE_STEER, decision_refused)
        problem = self._steering.problem(self._turn, steer)
        if problem:
            raise decision_refused(problem)

    @workflow.update(name=UPDATE_INTERRUPT)
    def interrupt(self, raw: RawValue) -> InterruptResult:
        interrupt = inputs.parsed(raw, InterruptInput, "interrupt")
        turn = self._turn
        problem = self._steering.problem(turn, interrupt)
        if turn is None or problem:
            raise ApplicationError(problem or "the turn has not begun", non_retryable=True)
        return self._steering.interrupt_turn(turn, interrupt, workflow.now())

    @interrupt.validator
    def _validate_interrupt(self, raw: RawValue) -> None:
        interrupt = inputs.update_input(
            raw, InterruptInput, "interrupt", UPDATE_INTERRUPT, decision_refused
        )
        problem = self._steering.problem(self._turn, interrupt)
        if problem:
            raise decision_refused(problem)

    @workflow.update(name=UPDATE_CANCEL)
    async def cancel(self, raw: RawValue) -> CancelResult:
        cancel = inputs.parsed(raw, CancelInput, "cancel")
        turn = self._turn
        problem = self._steering.problem(turn, cancel)
        if turn is None or problem:
            raise ApplicationError(problem or "the turn has not begun", non_retryable=True)
        accepted = self._cancels.accept(turn, cancel, workflow.now())
        await self._cancels.request(cancel)
        return accepted

    @cancel.validator
    def _validate_cancel(self, raw: RawValue) -> None:
        cancel = inputs.update_input(raw, CancelInput, "cancel", UPDATE_CANCEL, decision_refused)
        problem = self._steering.problem(self._turn, cancel)
        if problem:
            raise decision_refused(problem)

    @workflow.signal(name=SIGNAL_SUBMIT_TOOL_RESULT)
    def submit_tool_result(self, raw: RawValue) -> None:
        if self._ignored_unencrypted(raw, SIGNAL_SUBMIT_TOOL_RESULT):
            return
        result = inputs.signal_input(raw, SubmitToolResultInput, SIGNAL_SUBMIT_TOOL_RESULT)
        if result is None:
            return
        problem = self._pending.why_not(result.call_id, "external")
        if problem:
            workflow.logger.warning(
                "submit_tool_result signal ignored: %s", problem, extra={"call_id": result.call_id}
            )
            return
        self._pending.submit(result)

    @workflow.signal(name=SIGNAL_SUBAGENT_PENDING)
    def subagent_pending(self, raw: RawValue) -> None:
        note = inputs.signal_input(raw, SubagentPending, SIGNAL_SUBAGENT_PENDING)
        turn = self._turn
        if note is None or turn is None or turn.ended is not None:
            return
        if not subagent_relay.child_waits(turn, self._pending, note, workflow.now()):
            workflow.logger.warning(
                "subagent_pending signal ignored: %s is not a sub-agent of this turn",
                note.workflow_id,
            )
            return
        self._observer.call_waits(turn)  # shown here, and told to this turn's own parent

    @workflow.signal(name=SIGNAL_SUBAGENT_CANCELLED)
    def subagent_cancelled(self, raw: RawValue) -> None:
        note = inputs.signal_input(raw, SubagentCancelled, SIGNAL_SUBAGENT_CANCELLED)
        turn = self._turn
        if note is None or turn is None:
            return
        if not subagent_relay.child_cancelled(turn, note):
            workflow.logger.warning(
                "subagent_cancelled signal ignored: %s is not a sub-agent of this turn",
                note.workflow_id,
            )

    @workflow.signal(name=SIGNAL_EVENT)
    def event(self, raw: RawValue) -> None:
        """An event for this turn's key (`POST /v1/agents/{agent_id}/events`): a `wait` for its
        name gets its payload; a second delivery of its idempotency id is dropped."""
        if self._ignored_unencrypted(raw, SIGNAL_EVENT):
            return
        event = inputs.signal_input(raw, AgentEvent, SIGNAL_EVENT)
        if event is None:
            return
        if not self._pending.waits.deliver(event, begun=self._turn is not None):
            workflow.logger.info(
                "event signal dropped: delivered before",
                extra={"idempotency_id": event.idempotency_id},
            )

    @workflow.signal(name=SIGNAL_TENANT_CAPS_CHANGED)
    def tenant_caps_changed(self) -> None:
        """From the tenant's ledger: its caps changed, so a turn waiting for them calls again."""
        self._budget.tenant_caps.changed = True

    @workflow.query(name=QUERY_STATUS)
    def status(self) -> TurnStatus:
        turn = self._turn
        if turn is None:
            return TurnStatus(state="failed" if self._early_failure else "running")
        return TurnStatus(
            state=turn.state,
            agent_id=turn.request.agent.id,
            started_by=turn.started_by,
            schedule=turn.schedule,
            signing_version=turn.approvals.signing_version,
            first_run_id=workflow.info().first_execution_run_id,
            iteration=turn.iteration,
            llm_calls=turn.spend.model_calls,
            tool_calls=turn.spend.tool_calls,
            cost_usd=round(turn.spend.cost_usd, 10),
            elapsed_ms=turn.active_ms(workflow.now()),
            pending=self._pending.listing(),
            refused_decisions=list(turn.approvals.refused_decisions),
            refused_decisions_dropped=turn.approvals.refused_decisions_dropped,
            budget_request=turn.budget.budget_request,
            budget_extensions=list(turn.budget.budget_extensions),
            interventions=list(turn.steers.interventions),
            subagents=list(turn.children.subagents),
            skills_loaded=list(turn.tools.skills_loaded),
            capacity_wait_ms=turn.fleet.capacity_wait_ms,
            capacity_awaited=turn.fleet.capacity_awaited,
            guardrail_decisions=list(turn.guardrails.guardrail_decisions),
            policy_decisions=list(turn.policies.policy_decisions),
            waiting_for=self._pending.waits.listing(),
        )

    @workflow.signal(name=SIGNAL_CAPACITY_WAIT)
    def capacity_wait(self, wait: CapacityWait) -> None:
        """The model call in flight waits for fleet capacity (sent by the model-call activity,
        `activities/llm/rate_gate.py`): shown by `status` until the call returns."""
        if self._turn is not None:
            self._turn.fleet.awaiting(wait, workflow.now())

    @workflow.query(name=QUERY_TRANSCRIPT)
    def transcript(self) -> list[Message]:
        return list(self._turn.messages) if self._turn is not None else []

    @workflow.query(name=QUERY_DECISIONS)
    def decisions(self) -> list[DecisionRecord]:
        """Who decided each approval, how and why: the transcript's metadata."""
        return self._decisions()


# PINNED: a turn finishes on the build that started it. Turns park for days on approvals, and a
# pinned turn never meets code that cannot replay its history, so a deploy needs no patch for
# in-flight turns, and the old build drains as its turns end. A long turn moves to the current
# build only where that is safe, at continue-as-new (a fresh history, see `_continue_as_new`).
# A subclass that only versioned workers register (`runtime.wiring.worker_workflows`): the SDK
# sends a workflow's behaviour with every task, and the server refuses any behaviour from an
# unversioned worker ("versioning behavior cannot be specified without deployment options").
@workflow.defn(name=WORKFLOW_TYPE, versioning_behavior=VersioningBehavior.PINNED)
class PinnedAgentTurnWorkflow(AgentTurnWorkflow):
    """`AgentTurnWorkflow` as a versioned worker runs it: pinned to its build."""

    # The SDK wants the run method (and so the init beside it) declared on the registered class.
    @workflow.init
    def __init__(self, request: RawValue, carried: Any = None) -> None:
        super().__init__(request, carried)

    @workflow.run
    async def run(self, request: RawValue, carried: Any = None) -> AgentReport:
        return await super().run(request, carried)
