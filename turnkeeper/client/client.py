"""Turns from Python: start one, follow it, decide what waits for a human, read its report.

client = await turnkeeper.connect()
handle = await turnkeeper.start_turn(
    client,
    agent={"id": "support", "model": "anthropic:claude-sonnet-4-6", "tools": ["refund"]},
    task={"id": "ticket-7", "input": "Refund order 1042"},
)
async for event in handle.events():
    if event.kind == "approval_requested":
        await handle.approve(event.call_id, approver="alice")
report = await handle.result()

With `output_type=SomeModel` the agent answers in that model's JSON, and `await handle.output()`
returns it as a `SomeModel`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import timedelta
from typing import Any, Generic, TypeVar, overload

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel, JsonValue, TypeAdapter
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.client.attachments import Attachment, with_attachments
from turnkeeper.client.errors import DecisionRefused, refused, turn_error
from turnkeeper.client.events import turn_events
from turnkeeper.client.signatures import signed_decision, signed_extension, signed_intervention
from turnkeeper.client.turns import (
    WaitingTurn,
    given_request,
    list_waiting,
    short_id,
    start_turn_workflow,
    turn_workflow_id,
)
from turnkeeper.client.typed_output import Output, output_schema, structured
from turnkeeper.client.waiting import wait_for_pending
from turnkeeper.contracts.budget_extension import ExtendBudgetInput, ExtendBudgetResult
from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.names import (
    DEFAULT_TASK_QUEUE,
    QUERY_DECISIONS,
    QUERY_STATUS,
    QUERY_TRANSCRIPT,
    SIGNAL_SUBMIT_TOOL_RESULT,
    TASK_QUEUE_ENV,
    UPDATE_CANCEL,
    UPDATE_DECIDE,
    UPDATE_EXTEND_BUDGET,
    UPDATE_INTERRUPT,
    UPDATE_STEER,
)
from turnkeeper.contracts.signals import (
    ALL_PENDING,
    ApproveInput,
    DecideResult,
    DecisionRecord,
    PendingCall,
    SubmitToolResultInput,
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
from turnkeeper.contracts.turn import AgentReport, TurnRequest

_MESSAGES = TypeAdapter(list[Message])
_DECISIONS = TypeAdapter(list[DecisionRecord])
DEFAULT_SIGNATURE_LIFETIME = timedelta(minutes=10)
Result = TypeVar("Result")
Other = TypeVar("Other", bound=BaseModel)


class TurnHandle(Generic[Output]):
    """One turn: its workflow id, and what a caller can do with it. `output_type`: the model
    `output()` reads the answer as (given to `start_turn`)."""

    def __init__(
        self,
        client: Client,
        workflow: WorkflowHandle[Any, AgentReport],
        output_type: type[Output] | None = None,
    ) -> None:
        self.client = client
        self.workflow = workflow
        self.output_type = output_type

    @property
    def id(self) -> str:
        return self.workflow.id

    async def status(self) -> TurnStatus:
        """State, iteration, counters, cost, the time worked (`elapsed_ms`, which leaves out
        waits for humans, as the time budget does) and the calls waiting for a human or the
        caller."""
        return await self.workflow.query(QUERY_STATUS, result_type=TurnStatus)

    async def transcript(self) -> list[Message]:
        return _MESSAGES.validate_python(await self.workflow.query(QUERY_TRANSCRIPT))

    async def decisions(self) -> list[DecisionRecord]:
        return _DECISIONS.validate_python(await self.workflow.query(QUERY_DECISIONS))

    async def approve(
        self,
        call_id: str = ALL_PENDING,
        *,
        approver: str = "",
        reason: str = "",
        remember: bool = False,
        input: dict[str, JsonValue] | None = None,
        key: Ed25519PrivateKey | None = None,
        expires_in: timedelta = DEFAULT_SIGNATURE_LIFETIME,
    ) -> list[DecisionRecord]:
        """Approve a waiting call (`*`: every one), optionally with an edited `input`, and return
        the decisions as the turn applied them. With `key` the decision is signed (required when
        the agent's approvers have public keys).

        Raises:
            DecisionRefused: The turn refused it (the message says why).
        """
        decision = ApproveInput(
            call_id=call_id,
            approved=True,
            approver=approver,
            reason=reason,
            remember=remember,
            input=input,
        )
        return await self._decide(decision, key, expires_in)

    async def reject(
        self,
        call_id: str = ALL_PENDING,
        *,
        reason: str,
        approver: str = "",
        key: Ed25519PrivateKey | None = None,
        expires_in: timedelta = DEFAULT_SIGNATURE_LIFETIME,
    ) -> list[DecisionRecord]:
        """Reject a waiting call: the model gets an error result carrying `reason`.

        Raises:
            DecisionRefused: The turn refused it (the message says why).
        """
        decision = ApproveInput(call_id=call_id, approved=False, approver=approver, reason=reason)
        return await self._decide(decision, key, expires_in)

    async def extend_budget(
        self,
        *,
        cost_usd: float | None = None,
        time_ms: int | None = None,
        iterations: int | None = None,
        tool_interactions: int | None = None,
        approver: str = "",
        reason: str = "",
        key: Ed25519PrivateKey | None = None,
        expires_in: timedelta = DEFAULT_SIGNATURE_LIFETIME,
    ) -> ExtendBudgetResult:
        """Give a turn waiting in state `awaiting_budget` more budget (amounts are added; at
        least one). With `key` the extension is signed for the request the turn waits on
        (required when the agent's approvers have public keys).

        Raises:
            pydantic.ValidationError: No amount, or one that is not positive.
            DecisionRefused: The turn refused it (the message says why).
        """
        extension = ExtendBudgetInput(
            cost_usd=cost_usd,
            time_ms=time_ms,
            iterations=iterations,
            tool_interactions=tool_interactions,
            approver=approver,
            reason=reason,
        )
        if key is not None:
            extension = signed_extension(extension, await self.status(), self.id, key, expires_in)
        payload = extension.model_dump(mode="json", exclude_none=True)
        return await self._update(UPDATE_EXTEND_BUDGET, payload, ExtendBudgetResult)

    async def steer(
        self,
        message: str,
        *,
        author: str = "",
        key: Ed25519PrivateKey | None = None,
        expires_in: timedelta = DEFAULT_SIGNATURE_LIFETIME,
    ) -> SteerResult:
        """Add `message` to the running turn's conversation, as a user message before its next
        model call (the `steer` update). With `key` it is signed (required when the agent's
        approvers have public keys).

        Raises:
            pydantic.ValidationError: An empty message.
            DecisionRefused: The turn refused it (it has ended, is being interrupted, or the
                author or signature does not count); the message says why.
        """
        steer = SteerInput(message=message, author=author)
        if key is not None:
            steer = signed_intervention(steer, await self.status(), self.id, key, expires_in)
        payload = steer.model_dump(mode="json", exclude_none=True)
        return await self._intervene(UPDATE_STEER, payload, SteerResult)

    async def interrupt(
        self,
        reason: str = "",
        *,
        author: str = "",
        key: Ed25519PrivateKey | None = None,
        expires_in: timedelta = DEFAULT_SIGNATURE_LIFETIME,
    ) -> InterruptResult:
        """Stop the turn at its next safe point (the `interrupt` update): a model call in flight
        is finished, tools not started are not started, running ones are cancelled, and the turn
        completes with outcome `interrupted` and the report so far (`result()`). With `key` it
        is signed.

        Raises:
            DecisionRefused: The turn refused it (the message says why).
        """
        interrupt = InterruptInput(reason=reason, author=author)
        if key is not None:
            interrupt = signed_intervention(
                interrupt, await self.status(), self.id, key, expires_in
            )
        payload = interrupt.model_dump(mode="json", exclude_none=True)
        return await self._intervene(UPDATE_INTERRUPT, payload, InterruptResult)

    async def _intervene(
        self, name: str, payload: dict[str, Any], result_type: type[Result]
    ) -> Result:
        """`_update`, where a closed workflow is a refusal too: its validator cannot run any
        more, and Temporal answers for it that the execution has completed."""
        try:
            return await self._update(name, payload, result_type)
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
            raise DecisionRefused(
                f"the turn {self.id!r} has ended (or never existed); there is nothing left to "
                f"{name}: {error.message}"
            ) from None

    async def submit(self, call_id: str, output: JsonValue, *, is_error: bool = False) -> None:
        """The caller's result for an external tool call."""
        result = SubmitToolResultInput(call_id=call_id, output=output, is_error=is_error)
        await self.workflow.signal(SIGNAL_SUBMIT_TOOL_RESULT, result.model_dump(mode="json"))

    async def wait_for_approval(
        self,
        # The contract names it `timeout`; it bounds a polling loop, not one await.
        timeout: float | timedelta = 30.0,  # noqa: ASYNC109
        *,
        tool: str | None = None,
    ) -> PendingCall:
        """Waits until a call of the turn (of `tool`, if given) waits for an approval, and
        returns it: what a test, or a script that approves, does before `approve`.

        Raises:
            TimeoutError: No call waited for an approval within `timeout` (seconds).
            TurnError: The turn failed first (the subclass of its error type).
            LookupError: The turn ended first without asking for one.
        """
        return await wait_for_pending(self, "approval", timeout, tool)

    async def result(self) -> AgentReport:
        """Waits for the turn's report.

        Raises:
            TurnError: A subclass named like the contract's error type (`TurnBudgetExceeded`,
                `LLMUnavailable`, …, or `TurnCancelled`), with the partial report.
        """
        try:
            return await self.workflow.result()
        except WorkflowFailureError as failure:
            raise turn_error(failure) from failure

    @overload
    async def output(self) -> Output: ...

    @overload
    async def output(self, output_type: type[Other]) -> Other: ...

    async def output(self, output_type: type[BaseModel] | None = None) -> BaseModel:
        """Waits for the turn's report and returns its structured answer as `output_type`
        (default: the `output_type` given to `start_turn`; a handle got by id takes it here).

        Raises:
            TurnError: As `result()`.
            TypeError: No output type, here or at `start_turn`.
            ValueError: The turn ended without a structured answer.
            pydantic.ValidationError: The answer fits the schema but not the type's own
                validators (an output validator on the worker lets the model correct that).
        """
        wanted = output_type or self.output_type
        if wanted is None:
            raise TypeError(
                "this handle has no output type: give one, handle.output(SomeModel), or "
                "start the turn with output_type="
            )
        return structured(await self.result(), wanted)

    def events(self) -> AsyncIterator[TurnEvent]:
        """The turn's events from its first, then live ones until it ends."""
        return turn_events(self.client, self.id)

    async def cancel(
        self,
        reason: str = "",
        *,
        author: str | None = None,
        key: Ed25519PrivateKey | None = None,
        expires_in: timedelta = DEFAULT_SIGNATURE_LIFETIME,
    ) -> None:
        """Cancel the turn: it ends with outcome `cancelled`, its partial report readable by
        query, its sub-agents cancelled. Without `key`, Temporal's own cancellation (anyone with
        access to the namespace may send it); with `key`, the `cancel` update signed as
        `author`, which a turn whose agent's approvers have keys checks like an interrupt
        before it asks Temporal for the cancellation itself.

        Raises:
            DecisionRefused: The turn refused the signed cancel (it has ended, the author is no
                approver, the signature does not count); the message says why.
        """
        if key is None:
            await self.workflow.cancel(reason=reason)
            return
        cancel = CancelInput(reason=reason, author=author or "")
        cancel = signed_intervention(cancel, await self.status(), self.id, key, expires_in)
        payload = cancel.model_dump(mode="json", exclude_none=True)
        await self._intervene(UPDATE_CANCEL, payload, CancelResult)

    async def _decide(
        self, decision: ApproveInput, key: Ed25519PrivateKey | None, expires_in: timedelta
    ) -> list[DecisionRecord]:
        if key is not None:
            decision = signed_decision(decision, await self.status(), self.id, key, expires_in)
        payload = decision.model_dump(mode="json")
        return (await self._update(UPDATE_DECIDE, payload, DecideResult)).decisions

    async def _update(
        self, name: str, payload: dict[str, Any], result_type: type[Result]
    ) -> Result:
        """Sends the update `name`; the turn's refusal becomes `DecisionRefused`."""
        try:
            return await self.workflow.execute_update(name, payload, result_type=result_type)
        except WorkflowUpdateFailedError as error:
            raise refused(error, DecisionRefused) from None


@overload
async def start_turn(
    client: Client,
    request: TurnRequest | Mapping[str, Any] | None = None,
    /,
    *,
    id: str | None = None,
    task_queue: str | None = None,
    started_by: str | None = None,
    attachments: Sequence[Attachment] = (),
    output_type: type[Output],
    **fields: Any,
) -> TurnHandle[Output]: ...


@overload
async def start_turn(
    client: Client,
    request: TurnRequest | Mapping[str, Any] | None = None,
    /,
    *,
    id: str | None = None,
    task_queue: str | None = None,
    started_by: str | None = None,
    attachments: Sequence[Attachment] = (),
    output_type: None = None,
    **fields: Any,
) -> TurnHandle[Any]: ...


async def start_turn(
    client: Client,
    request: TurnRequest | Mapping[str, Any] | None = None,
    /,
    *,
    id: str | None = None,
    task_queue: str | None = None,
    started_by: str | None = None,
    attachments: Sequence[Attachment] = (),
    output_type: type[Any] | None = None,
    **fields: Any,
) -> TurnHandle[Any]:
    """Start one agent turn and return its handle (the turn runs on its own).

    Args:
        client: From `turnkeeper.connect()`: our data converter, store and encryption.
        request: A `TurnRequest`, or its JSON as a dict; or leave it out and pass its fields
            (`agent=…, task=…, external_tools=…, history=…`) as keyword arguments.
        id: The workflow id (default: `turn-<agent id>-<random>`): a letter or digit, then
            letters, digits and `. _ - : @`, at most 200 characters; never an id the runtime
            keeps for its own workflows (`approval-cache-…`, `rate-limit-…`, nested ids).
        task_queue: The workers' queue (default: `AGENT_TASK_QUEUE` or `agent-turns`, as the
            worker reads it).
        started_by: The identity a server signed in as the turn's owner (the HTTP API passes
            its caller's): the turn's `StartedBy` search attribute, its status's and report's
            `started_by`, inherited by its sub-agents' turns. None: nobody's.
        attachments: Files (paths) and `turnkeeper.Image`s to add to the task's input after its
            text: stored in the content store before the turn starts (docs/attachments.md).
        output_type: A pydantic model: the agent's `output_schema` becomes its strict JSON
            Schema, and `handle.output()` returns the answer as an instance of it.

    Raises:
        InvalidTurnRequest: The request does not validate, sets `parent` (the runtime's), or
            `id` is not one a caller may give, or an attachment is refused: unreadable, of a
            type the agent's models do not take, or over a size limit (the message names the
            field or attachment and why); nothing is started then.
        TypeError: `output_type` is not a model that strict structured output can describe
            (the message names the field), or the request has an `output_schema` too.
    """
    turn = given_request(request, fields)
    if output_type is not None:
        turn = _with_output_type(turn, output_type)
    turn = with_attachments(turn, attachments)
    workflow_id = id or turn_workflow_id(turn.agent.id, short_id())
    queue = task_queue or os.environ.get(TASK_QUEUE_ENV) or DEFAULT_TASK_QUEUE
    workflow = await start_turn_workflow(
        client, turn, workflow_id=workflow_id, task_queue=queue, started_by=started_by
    )
    return TurnHandle(client, workflow, output_type)


def _with_output_type(turn: TurnRequest, output_type: type[BaseModel]) -> TurnRequest:
    if turn.agent.output_schema is not None:
        raise TypeError("give output_type or agent.output_schema, not both")
    agent = turn.agent.model_copy(update={"output_schema": output_schema(output_type)})
    return turn.model_copy(update={"agent": agent})


def turn(client: Client, workflow_id: str) -> TurnHandle:
    """The handle of a turn started earlier, by id."""
    return TurnHandle(client, client.get_workflow_handle(workflow_id, result_type=AgentReport))


async def pending(client: Client, task_queue: str | None = None) -> list[WaitingTurn]:
    """Every running turn waiting for a human or a caller, with its status."""
    return await list_waiting(client, task_queue)
