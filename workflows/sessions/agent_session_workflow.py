"""`AgentSessionWorkflow`: one conversation of many turns.

Each `send` starts the next turn as a child `AgentTurnWorkflow` (`<session id>/turn-<n>`, its own
run in the Web UI with every budget, approval and event of a turn) whose earlier conversation is
a reference into the content store (`history_ref`), never the messages themselves. One turn runs
at a time; when it answers, the session adopts the turn's conversation reference and keeps its
exchange in memory for the `messages` query. Between turns the session continues as new when
Temporal suggests it, carrying references and figures only, so a conversation of thousands of
turns keeps a small history.
"""

from __future__ import annotations

from typing import Any, Final

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue, VersioningBehavior
from temporalio.exceptions import (
    ApplicationError,
    ChildWorkflowError,
    TemporalError,
)

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError
    from temporalio.exceptions import CancelledError, TerminatedError
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.messages import Message
    from turnkeeper.contracts.names import (
        QUERY_MESSAGES,
        QUERY_STATUS,
        SESSION_WORKFLOW_TYPE,
        SIGNAL_TURN_STATE,
        UPDATE_CLOSE,
        UPDATE_SEND,
        WORKFLOW_TYPE,
    )
    from turnkeeper.contracts.request_checks import ENDPOINT_PRICES_PATCH, request_problem
    from turnkeeper.contracts.session import (
        CarriedSession,
        CloseInput,
        SendInput,
        SendResult,
        SessionRequest,
        SessionStatus,
        TurnStateNote,
    )
    from turnkeeper.contracts.turn import AgentReport, TaskSpec, TurnRequest
    from turnkeeper.contracts.turn_ids import runtime_prefixed
    from turnkeeper.workflows.activity_calls import CarryOn
    from turnkeeper.workflows.failures import describe
    from turnkeeper.workflows.fleet import fairness as tenant_fairness
    from turnkeeper.workflows.inputs import handlers as inputs
    from turnkeeper.workflows.inputs import plaintext
    from turnkeeper.workflows.inputs.placement import RUNTIME_IDS_PATCH
    from turnkeeper.workflows.inputs.plaintext import decoded
    from turnkeeper.workflows.observation.session_view import publish, turn_search_attributes
    from turnkeeper.workflows.sessions.state import Session
    from turnkeeper.workflows.sessions.stored_conversations import load_conversation

_UPGRADE_ON_CONTINUE = workflow.ContinueAsNewVersioningBehavior.AUTO_UPGRADE
# `close` without an input: the JSON null it stands for.
_NO_INPUT: Final = RawValue(Payload(metadata={"encoding": b"binary/null"}))


@workflow.defn(name=SESSION_WORKFLOW_TYPE)
class AgentSessionWorkflow:
    # `request` is a RawValue for the reason the turn's is: a payload that is not a session
    # request fails the session with InvalidSessionRequest instead of failing tasks forever.
    @workflow.init
    def __init__(self, request: RawValue, carried: Any = None) -> None:
        self._session: Session | None = None
        self._problem: str | None = None
        self._running: workflow.ChildWorkflowHandle[Any, AgentReport] | None = None
        # A continued run holds only the new exchange until the conversation is read back.
        self._reading_back = False
        self._defect: str | None = None
        try:
            self._session = _begin(decoded(request), inputs.carried(carried, CarriedSession))
        except ValueError as err:
            self._problem = str(err)
        except Exception as err:
            # A defect of ours here would fail workflow tasks forever: the session would look
            # alive and answer nothing. `run` ends it with TurnInternalError instead.
            if isinstance(err, TemporalError):
                raise
            self._defect = f"{type(err).__name__}: {err}"

    @workflow.run
    async def run(self, request: RawValue, carried: Any = None) -> SessionStatus:
        if plaintext.refused(request):
            raise plaintext.encryption_required("the session request")
        session = self._session
        if self._defect is not None:
            raise ApplicationError(
                f"internal error before the session began: {self._defect}",
                type=errors.TURN_INTERNAL_ERROR,
                non_retryable=True,
            )
        if session is None:
            raise ApplicationError(
                f"invalid session request: {self._problem}",
                type=errors.INVALID_SESSION_REQUEST,
                non_retryable=True,
            )
        publish(session)
        if carried is not None and session.conversation_ref is not None:
            self._reading_back = True
            try:
                await self._load_messages(session, session.conversation_ref)
            finally:
                self._reading_back = False
        while True:
            await workflow.wait_condition(
                lambda: (
                    self._running is not None
                    or session.state == "closed"
                    or self._continue_as_new_due()
                )
            )
            if self._running is not None:
                await self._settle_turn(session, self._running)
            elif session.state == "closed":
                await workflow.wait_condition(workflow.all_handlers_finished)
                return session.status()
            else:
                self._continue_as_new(session, request)

    # ---- turns ----------------------------------------------------------------------------

    async def _settle_turn(
        self, session: Session, turn: workflow.ChildWorkflowHandle[Any, AgentReport]
    ) -> None:
        report: AgentReport | None
        try:
            report = await turn
            session.record_answer(report)
        except ChildWorkflowError as err:
            error_type, report = _failure_of(err)
            session.record_failure(error_type, report)
        if report is not None and any(e.cost_usd for e in report.budget_extensions):
            session.count_extensions(report)
        self._running = None
        publish(session)
        ended = session.recent_turns[-1]
        # Ids and figures only: log lines are not encrypted.
        workflow.logger.info(
            "session turn ended",
            extra={
                "session_id": session.request.session_id,
                "turn_workflow_id": ended.turn_workflow_id,
                "outcome": ended.outcome,
                "error_type": ended.error_type,
                "joined_conversation": ended.joined_conversation,
                "turn_cost_usd": ended.cost_usd,
                "session_cost_usd": round(session.cost_usd, 10),
            },
        )

    def _continue_as_new_due(self) -> bool:
        """Only between turns, with no update half answered: nothing is in flight to carry."""
        return workflow.info().is_continue_as_new_suggested() and workflow.all_handlers_finished()

    def _continue_as_new(self, session: Session, request: RawValue) -> None:
        """The one place the session continues as new: its request and a carry of references
        and figures. Worker versioning sets the next run's behaviour here."""
        workflow.logger.info("session continues as new", extra={"turns": session.turns})
        # As a turn does (workflows/agent_turn_workflow.py): the next run starts on the
        # deployment's current version, so a weeks-long conversation moves to new code at its
        # next continue-as-new instead of holding an old build. Only on a versioned worker: the
        # server refuses the behaviour from an unversioned one.
        versioned = workflow.info().get_current_deployment_version() is not None
        workflow.continue_as_new(
            args=[request, session.carry()],
            initial_versioning_behavior=_UPGRADE_ON_CONTINUE if versioned else None,
        )

    async def _load_messages(self, session: Session, ref: str) -> None:
        """Reads the conversation back for the `messages` query. A store that lost it costs the
        query its content, not the session: the next turn fails typed on the missing reference."""
        # A cancel during the read-back, too, has always left the session running.
        unread = CarryOn(
            None, "session could not read its conversation back: %s", even_when_cancelled=True
        )
        loaded = await load_conversation(ref, "load the conversation", unread)
        if loaded is None:
            return
        session.messages = [*loaded.messages, *session.messages]

    # ---- updates and queries --------------------------------------------------------------

    @workflow.update(name=UPDATE_SEND)
    async def send(self, raw: RawValue) -> SendResult:
        session, send = self._send_input(raw)
        # Checked again: a second send in the same task passed its validator before this ran.
        _refuse_if(session.refusal_to_send(), session)
        request = session.begin_turn(send)
        try:
            self._running = await workflow.start_child_workflow(
                WORKFLOW_TYPE,
                # Only what differs from the contract's defaults: it is in history every turn.
                request.model_dump(mode="json", exclude_defaults=True),
                id=request.task.id,
                result_type=AgentReport,
                static_summary=request.summary(),
                search_attributes=turn_search_attributes(request, session),
                priority=tenant_fairness.priority(request),
            )
        except Exception as err:
            session.turn_not_started()
            raise ApplicationError(
                f"the turn could not be started: {err}",
                type=errors.SESSION_REFUSED,
                non_retryable=True,
            ) from None
        publish(session)
        workflow.logger.info(
            "session turn started",
            extra={"session_id": session.request.session_id, "turn_workflow_id": request.task.id},
        )
        return SendResult(turn_workflow_id=request.task.id)

    @send.validator
    def _validate_send(self, raw: RawValue) -> None:
        plaintext.reject_unencrypted(raw, f"the {UPDATE_SEND} update")
        session, _ = self._send_input(raw)
        _refuse_if(session.refusal_to_send(), session)

    # A RawValue, not Any, so that the validator sees the mark of an unencrypted payload; the
    # default stands for no input (Temporal passes none when the caller sent none).
    @workflow.update(name=UPDATE_CLOSE)
    async def close(self, raw: RawValue = _NO_INPUT) -> SessionStatus:
        session, close = self._close_input(raw)
        _refuse_if(session.refusal_to_close(), session)
        session.close(close.reason)
        publish(session)
        workflow.logger.info(
            "session closed",
            extra={"session_id": session.request.session_id, "turns": session.turns},
        )
        return session.status()

    @close.validator
    def _validate_close(self, raw: RawValue = _NO_INPUT) -> None:
        plaintext.reject_unencrypted(raw, f"the {UPDATE_CLOSE} update")
        session, _ = self._close_input(raw)
        _refuse_if(session.refusal_to_close(), session)

    @workflow.signal(name=SIGNAL_TURN_STATE)
    def turn_state(self, raw: RawValue) -> None:
        """The running turn started or stopped waiting for a human (`awaiting_budget` …)."""
        if plaintext.refused(raw):
            # Its turns send it encrypted: this one came from elsewhere.
            workflow.logger.warning("turn_state signal ignored: it arrived unencrypted")
            return
        note = inputs.signal_input(raw, TurnStateNote, SIGNAL_TURN_STATE)
        if note is None:
            return
        if self._session is not None and self._session.turn_reported(note):
            publish(self._session)

    @workflow.query(name=QUERY_STATUS)
    def status(self) -> SessionStatus:
        return self._live().status()

    @workflow.query(name=QUERY_MESSAGES)
    def messages(self) -> list[Message]:
        # A part of the conversation would read as all of it: say it is not there yet instead.
        if self._reading_back:
            raise ApplicationError(
                f"{errors.SESSION_CONVERSATION_LOADING}: the session continued as new and is "
                "reading its conversation back from the content store; ask again in a moment",
                type=errors.SESSION_CONVERSATION_LOADING,
            )
        return list(self._live().messages)

    def _live(self) -> Session:
        if self._session is None:
            raise ApplicationError(f"invalid session request: {self._problem}")
        return self._session

    def _send_input(self, raw: RawValue) -> tuple[Session, SendInput]:
        session = self._live()
        return session, inputs.parsed(raw, SendInput, "send", _refused)

    def _close_input(self, raw: RawValue) -> tuple[Session, CloseInput]:
        session = self._live()
        payload = decoded(raw)
        return session, inputs.validated(
            CloseInput, {} if payload is None else payload, "close", _refused
        )


def _begin(payload: Any, carried: CarriedSession | None) -> Session:
    """The session's state from its request (and the previous run's carry).

    Raises:
        ValueError: The request does not validate; the message names the field.
    """
    try:
        request = SessionRequest.model_validate(payload)
    except ValidationError as err:
        raise ValueError(describe(err)) from None
    workflow_id = workflow.info().workflow_id
    if request.session_id != workflow_id:
        raise ValueError(
            f"session_id: {request.session_id!r} must be the session's workflow id "
            f"({workflow_id!r}), which its turns' ids begin with"
        )
    # A session at `approval-cache-<agent>` or `rate-limit-<key>` would take that id from the
    # runtime as a turn there would; asked only of a session that fails here.
    reserved = runtime_prefixed(workflow_id) if carried is None else None
    if reserved and workflow.patched(RUNTIME_IDS_PATCH):
        raise ValueError(f"session_id: {workflow_id!r} is reserved: {reserved}")
    # The checks of a turn request that span fields (a cost budget on an unpriced model, an
    # invalid output schema …) are made once here, on the turn every send would start.
    probe = TurnRequest(
        agent=request.agent,
        task=TaskSpec(id="probe", input="probe", constraints=request.constraints),
    )
    problem = request_problem(
        probe, endpoints_may_price=lambda: workflow.patched(ENDPOINT_PRICES_PATCH)
    )
    if problem:
        # Named as the session's input names the field.
        raise ValueError(problem.replace("task.constraints.", "constraints.", 1))
    if carried is not None:
        return Session.resume(request, carried)
    return Session(request=request, started=workflow.now())


def _refused(message: str) -> ApplicationError:
    """An update's input that does not fit: refused, and not worth sending again as it is."""
    return ApplicationError(message, type=errors.SESSION_REFUSED, non_retryable=True)


def _refuse_if(refusal: str | None, session: Session) -> None:
    """Refuses an update. Its details name the running turn, so that a client that saw that turn
    end can tell the session has not yet recorded it and try again."""
    if refusal:
        raise ApplicationError(
            refusal,
            {"running_turn_id": session.running_turn_id},
            type=errors.SESSION_REFUSED,
            non_retryable=True,
        )


def _failure_of(err: ChildWorkflowError) -> tuple[str, AgentReport | None]:
    """The contract's error type of a turn that did not complete, and its partial report."""
    cause = err.cause
    if isinstance(cause, CancelledError | TerminatedError):
        return errors.TURN_CANCELLED, None
    if isinstance(cause, ApplicationError):
        try:
            partial = AgentReport.model_validate(cause.details[0]) if cause.details else None
        except ValidationError:
            partial = None
        return cause.type or "TurnError", partial
    return type(cause).__name__ if cause is not None else "TurnError", None


# Registered by versioned workers only, under the same name: the server refuses a versioning
# behaviour from an unversioned worker. PINNED for the reason a turn is: a session parks for days
# between messages, and its history must replay on the code that wrote it; it moves to the
# current build at continue-as-new. Its child turns start on the session's version.
@workflow.defn(name=SESSION_WORKFLOW_TYPE, versioning_behavior=VersioningBehavior.PINNED)
class PinnedAgentSessionWorkflow(AgentSessionWorkflow):
    """`AgentSessionWorkflow` as a versioned worker runs it: pinned to its build."""

    # The SDK wants the run method (and so the init beside it) declared on the registered class.
    @workflow.init
    def __init__(self, request: RawValue, carried: Any = None) -> None:
        super().__init__(request, carried)

    @workflow.run
    async def run(self, request: RawValue, carried: Any = None) -> SessionStatus:
        return await super().run(request, carried)
