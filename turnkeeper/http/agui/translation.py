"""A turn's events as AG-UI events: `Translation` reads the turn's event stream one event at a
time and says what an AG-UI client sees of it. It does no I/O; the run (`run.py`) decides when
the run starts, waits and ends.

What maps to what (docs/ag-ui.md, What the stream says):

- a model call is a step (`STEP_STARTED` / `STEP_FINISHED`, named `model call <iteration>`),
  its streamed text one assistant text message (`TEXT_MESSAGE_*`); a model call whose text was
  not streamed (the request asked for no deltas) sends its answer as one content event;
- a tool call is `TOOL_CALL_START` / `ARGS` / `END` when it is proposed (its approval request
  or its start, whichever comes first), `TOOL_CALL_RESULT` when it settles or is rejected;
- a sub-agent call is a tool call and a subagent invocation (`SUBAGENT_STARTED` with the child
  turn's workflow id as its `subagentRunId`, `SUBAGENT_FINISHED` or `SUBAGENT_ERROR`);
- `budget_status` is a `STATE_SNAPSHOT` of cost and budgets.

Message and call ids derive from the turn (its workflow id, iteration, call ids), so the run that
resumes a turn after an interrupt names what it continues as the interrupted run named it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedSuspendedOutcome,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from turnkeeper.contracts.events import TurnEvent

# The name of the CUSTOM event that takes back a failed attempt's streamed text (AG-UI has no
# event that retracts text; a client that knows this one drops the message it names).
TEXT_DISCARDED: Final = "turnkeeper:text_discarded"


@dataclass
class Budgets:
    """What the `STATE_SNAPSHOT` says: the turn's cost and budgets, as last heard."""

    workflow_id: str
    cost_usd: float = 0.0
    cost_budget_usd: float | None = None
    elapsed_ms: int = 0
    time_budget_ms: int | None = None
    llm_calls: int = 0
    tool_calls: int = 0
    iteration: int = 0
    max_iterations: int | None = None
    pending: list[dict[str, Any]] = field(default_factory=list)

    def heard(self, event: TurnEvent) -> None:
        """Takes the numbers of a `budget_status` event."""
        self.cost_usd = event.cost_usd or 0.0
        self.cost_budget_usd = event.cost_budget_usd
        self.elapsed_ms = event.elapsed_ms or 0
        self.time_budget_ms = event.time_budget_ms
        self.llm_calls = event.llm_calls or 0
        self.tool_calls = event.tool_calls or 0
        self.iteration = event.iteration
        self.max_iterations = event.max_iterations

    def snapshot(self) -> StateSnapshotEvent:
        """The state as AG-UI's `STATE_SNAPSHOT` carries it (snake_case, as the API's)."""
        cost_left = _left(self.cost_budget_usd, self.cost_usd)
        state = {
            "workflow_id": self.workflow_id,
            "cost_usd": self.cost_usd,
            "cost_budget_usd": self.cost_budget_usd,
            "cost_left_usd": round(cost_left, 10) if cost_left is not None else None,
            "elapsed_ms": self.elapsed_ms,
            "time_budget_ms": self.time_budget_ms,
            "time_left_ms": _left(self.time_budget_ms, self.elapsed_ms),
            "iteration": self.iteration,
            "max_iterations": self.max_iterations,
            "iterations_left": _left(self.max_iterations, self.iteration),
            "llm_calls": self.llm_calls,
            "tool_calls": self.tool_calls,
            "pending": self.pending,
        }
        return StateSnapshotEvent(snapshot=state)


def _left(budget: float | None, spent: float) -> float | None:
    return None if budget is None else max(budget - spent, 0)


@dataclass
class Translation:
    """The AG-UI view of one turn, built event by event."""

    workflow_id: str
    budgets: Budgets = field(init=False)
    _message: str | None = None  # the text message open now
    _messages: int = 0  # text messages opened in this iteration (a retry opens another)
    _streamed: set[int] = field(default_factory=set)  # iterations whose text was streamed
    _step: str | None = None
    _announced: set[str] = field(default_factory=set)  # tool calls sent as TOOL_CALL_START
    _subagents: dict[str, str] = field(default_factory=dict)  # open: workflow id -> name
    _suspended: dict[str, str] = field(default_factory=dict)  # closed by an interrupt

    def __post_init__(self) -> None:
        self.budgets = Budgets(self.workflow_id)

    def events(self, event: TurnEvent) -> list[BaseEvent]:
        """What a client sees of `event` (nothing for the kinds it has no word for)."""
        match event.kind:
            case "iteration_started":
                return [*self._close_text(), *self._close_step(), *self._open_step(event)]
            case "text_delta":
                return self._text(event)
            case "text_discarded":
                return self._discard(event)
            case "model_call_finished":
                return [*self._answer(event), *self._close_step()]
            case "budget_status":
                self.budgets.heard(event)
                return [self.budgets.snapshot()]
            case "approval_requested" | "tool_call_started":
                return self.announce(event.call_id or "", event.tool or "", event.input)
            case "tool_call_finished":
                return [self._result(event, {"is_error": bool(event.is_error)})]
            case "approval_decided" if event.approved is False:
                # A rejected call never runs, so no `tool_call_finished` settles it: without a
                # result here, a client would take it for a call left to the application.
                rejected = {"is_error": True, "rejected": True, "reason": event.reason}
                return [self._result(event, rejected)]
            case "subagent_started":
                return self._subagent_started(event)
            case "subagent_finished":
                return self._subagent_finished(event)
        return []

    def announce(
        self, call_id: str, tool: str, arguments: dict[str, Any] | None
    ) -> list[BaseEvent]:
        """A tool call's START, ARGS and END, once per call (a call waiting for approval is
        announced by its request, before it starts)."""
        if call_id in self._announced:
            return []
        self._announced.add(call_id)
        start = ToolCallStartEvent(
            tool_call_id=call_id, tool_call_name=tool, parent_message_id=self._message
        )
        args = [] if arguments is None else [_args(call_id, arguments)]
        return [*self._close_text(), start, *args, ToolCallEndEvent(tool_call_id=call_id)]

    def suspend(self) -> list[BaseEvent]:
        """Closes what is open, as a run that ends on an interrupt must: the text message, the
        step, and each running sub-agent (suspended: its turn goes on after the answer)."""
        closing = [*self._close_text(), *self._close_step()]
        for run_id in self._subagents:
            outcome = SubagentFinishedSuspendedOutcome()
            closing.append(SubagentFinishedEvent(subagent_run_id=run_id, outcome=outcome))
        self._suspended.update(self._subagents)
        self._subagents.clear()
        return closing

    def resume(self) -> list[BaseEvent]:
        """Reopens the sub-agents an interrupt suspended, in the run that continues the turn."""
        reopened: list[BaseEvent] = [
            SubagentStartedEvent(subagent_run_id=run_id, name=name)
            for run_id, name in self._suspended.items()
        ]
        self._subagents.update(self._suspended)
        self._suspended.clear()
        return reopened

    # ---- model calls ------------------------------------------------------------------------

    def _open_step(self, event: TurnEvent) -> list[BaseEvent]:
        self._step = f"model call {event.iteration}"
        self._messages = 0
        return [StepStartedEvent(step_name=self._step)]

    def _close_step(self) -> list[BaseEvent]:
        if self._step is None:
            return []
        step, self._step = self._step, None
        return [StepFinishedEvent(step_name=step)]

    def _open_text(self, iteration: int) -> list[BaseEvent]:
        if self._message is not None:
            return []
        self._messages += 1
        self._message = f"{self.workflow_id}/{iteration}/text-{self._messages}"
        return [TextMessageStartEvent(message_id=self._message, role="assistant")]

    def _close_text(self) -> list[BaseEvent]:
        if self._message is None:
            return []
        message, self._message = self._message, None
        return [TextMessageEndEvent(message_id=message)]

    def _text(self, event: TurnEvent) -> list[BaseEvent]:
        if not event.text:
            return []
        self._streamed.add(event.iteration)
        opened = self._open_text(event.iteration)
        assert self._message is not None
        return [*opened, TextMessageContentEvent(message_id=self._message, delta=event.text)]

    def _discard(self, event: TurnEvent) -> list[BaseEvent]:
        if self._message is None:
            return []
        value = {"message_id": self._message, "discarded_chars": event.discarded_chars}
        return [*self._close_text(), CustomEvent(name=TEXT_DISCARDED, value=value)]

    def _answer(self, event: TurnEvent) -> list[BaseEvent]:
        """The end of a model call's text: what was streamed is closed, an answer that was not
        streamed is sent whole."""
        if event.iteration in self._streamed or not event.text:
            return self._close_text()
        opened = self._open_text(event.iteration)
        assert self._message is not None
        content = TextMessageContentEvent(message_id=self._message, delta=event.text)
        return [*opened, content, *self._close_text()]

    # ---- tool calls and sub-agents ------------------------------------------------------------

    def _result(self, event: TurnEvent, result: dict[str, Any]) -> ToolCallResultEvent:
        # The event stream carries no tool's output (it may be large or secret, and the stream
        # is readable by every approver): the result says how the call ended.
        call_id = event.call_id or ""
        return ToolCallResultEvent(
            message_id=f"{call_id}/result",
            tool_call_id=call_id,
            content=json.dumps({"tool": event.tool, **result}),
        )

    def _subagent_started(self, event: TurnEvent) -> list[BaseEvent]:
        run_id, name = event.workflow_id or "", event.tool or ""
        self._subagents[run_id] = name
        started = SubagentStartedEvent(
            subagent_run_id=run_id, name=name, parent_tool_call_id=event.call_id
        )
        return [*self.announce(event.call_id or "", name, None), started]

    def _subagent_finished(self, event: TurnEvent) -> list[BaseEvent]:
        run_id = event.workflow_id or ""
        if self._subagents.pop(run_id, None) is None:
            return []
        result = {"outcome": event.outcome, "workflow_id": run_id}
        ended: BaseEvent
        if event.is_error:
            why = event.message or event.outcome or "the sub-agent's turn failed"
            ended = SubagentErrorEvent(subagent_run_id=run_id, message=why, code=event.error_type)
            result["error_type"] = event.error_type
        else:
            ended = SubagentFinishedEvent(subagent_run_id=run_id, result=event.outcome)
        return [ended, self._result(event, {"is_error": bool(event.is_error), **result})]


def _args(call_id: str, arguments: dict[str, Any]) -> ToolCallArgsEvent:
    return ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(arguments))


def replayed(translation: Translation, events: Iterable[TurnEvent]) -> None:
    """Feeds `events` to `translation` without sending anything: the state of a run that has
    already shown them (the interrupted run), before the run that resumes the turn goes on."""
    for event in events:
        translation.events(event)
