"""The deterministic state one turn owns: transcript, counters, usage, cost and the clock of
time that counts against the budget. Every change to it is a method here, named for what
happened, so that one file says how a turn's state can move; the rest of the workflow reads it.
It never does I/O. It is a pydantic model so that a long turn carries it across continue-as-new
(`TurnProgress`, everything but the request, which travels as the run's first argument)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from pydantic import BaseModel, Field, JsonValue
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.activity_io import BlockRef, MessageDraft, ModelCallResult, ToolTraits
    from turnkeeper.contracts.budget_extension import (
        BudgetExtension,
        BudgetKind,
        BudgetRequest,
        ExtendBudgetInput,
    )
    from turnkeeper.contracts.call_costs import PricedCall
    from turnkeeper.contracts.decision_signing import LEGACY_SIGNING_VERSION, SIGNING_VERSION
    from turnkeeper.contracts.mcp import McpToolSpec
    from turnkeeper.contracts.messages import ContentBlock, Message, TextBlock, ToolResultBlock
    from turnkeeper.contracts.rate_limits import CapacityWait
    from turnkeeper.contracts.signals import (
        MAX_REFUSED_DECISIONS,
        DecisionRecord,
        RefusedDecision,
        TurnState,
    )
    from turnkeeper.contracts.skill_io import SkillInfo
    from turnkeeper.contracts.steering import Intervention
    from turnkeeper.contracts.turn import (
        AgentReport,
        Outcome,
        SubagentRecord,
        TurnRequest,
        Usage,
    )
    from turnkeeper.workflows.context_window import ContextWindow

# How much of a refused signal's own text the turn keeps: anyone may send one.
# (The states a turn leaves by ending; the others follow its pending calls and budget requests.)
_LIVE_STATES = ("running", "awaiting_approval", "awaiting_external", "awaiting_budget")
_REFUSED_FIELD_CHARS = 200
_REFUSED_REASON_CHARS = 600


class HumanClock(BaseModel):
    """Time spent waiting for humans or callers, which does not count against the time budget."""

    waiting: int = 0
    since: datetime | None = None
    total_ms: int = 0

    def start(self, now: datetime) -> None:
        if self.waiting == 0:
            self.since = now
        self.waiting += 1

    def stop(self, now: datetime) -> None:
        self.waiting -= 1
        if self.waiting == 0 and self.since is not None:
            self.total_ms += _ms(now - self.since)
            self.since = None

    def waited_ms(self, now: datetime) -> int:
        running = _ms(now - self.since) if self.since is not None else 0
        return self.total_ms + running


class Settled(NamedTuple):
    """One tool call settled: its `tool_result`, and the content-store reference of that result
    when a tool activity already stored it (the next model call then sends the reference)."""

    result: ToolResultBlock
    stored_ref: str | None = None


class RejectedAnswer(BaseModel):
    """A final answer sent back to the model (it did not fit `output_schema`, or an output
    validator rejected it): kept until the model answers again, so that a turn ending here
    reports it."""

    text: str
    why: str


class TurnProgress(BaseModel):
    """Everything a turn has done so far: what it carries across continue-as-new."""

    started: datetime
    messages: list[Message] = Field(default_factory=list)
    # Messages appended since the last model call, as they will be sent to the next one.
    unsent: list[MessageDraft] = Field(default_factory=list)
    conversation_ref: str | None = None
    context_ref: str | None = None
    state: TurnState = "running"
    iteration: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    tool_interactions: int = 0  # iterations in which the model asked for tools
    corrections: int = 0  # calls sent back to the model because their arguments did not fit
    declared_approval: set[str] = Field(default_factory=set)  # tools that always need approval
    tool_traits: dict[str, ToolTraits] = Field(default_factory=dict)  # of worker tools
    traits_loaded: bool = False
    mcp_tools: dict[str, McpToolSpec] = Field(default_factory=dict)  # discovered at the start
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    # Each model call's cost and who priced it (compact: a few dozen bytes a call).
    priced_calls: list[PricedCall] = Field(default_factory=list)
    models_used: list[str] = Field(default_factory=list)
    human: HumanClock = Field(default_factory=HumanClock)
    decisions: list[DecisionRecord] = Field(default_factory=list)
    refused_decisions: list[RefusedDecision] = Field(default_factory=list)  # the latest only
    refused_decisions_dropped: int = 0  # older refusals pushed out of `refused_decisions`
    # The applied signed '*' decisions (`signed_decisions.spent_key`): their signatures' text in
    # runs that verify signing format 1, the digests of what was signed in format 2.
    spent_signatures: list[str] = Field(default_factory=list)
    spent_decisions: list[str] = Field(default_factory=list)
    structured_output: JsonValue = None
    rejected: RejectedAnswer | None = None  # the last final answer sent back, until the next
    ended: datetime | None = None
    budget_request: BudgetRequest | None = None  # while in state awaiting_budget
    budget_requests: int = 0
    budget_extensions: list[BudgetExtension] = Field(default_factory=list)
    context_window: ContextWindow = Field(default_factory=ContextWindow)  # agent.compaction
    # A compacting turn with history_ref: the conversation it continues, read from the store so
    # that compaction can leave its oldest exchanges out too. Never in the report or transcript.
    earlier: list[Message] = Field(default_factory=list)
    earlier_loaded: bool = False
    # The stored conversation as it stood (uncompacted) when the turn's requests first began to
    # differ from it, and how many of this turn's messages it holds: the turn's whole
    # conversation is stored from there at the end.
    whole_ref: str | None = None
    whole_count: int = 0
    whole_recorded: bool = False
    # Fallback-chain models that exhausted their attempts, and when they may be tried again.
    model_cooldowns: dict[str, datetime] = Field(default_factory=dict)
    # Steers and the interrupt as applied (the audit trail), the steers not yet in the
    # conversation (they join it before the next model call), and the digests of the signed
    # steers applied, so that a copy of one steers nothing. Carried: a steer that arrives just
    # before a continue-as-new joins the next run's first model call.
    interventions: list[Intervention] = Field(default_factory=list)
    queued_steers: list[Intervention] = Field(default_factory=list)
    spent_steers: list[str] = Field(default_factory=list)
    # Sub-agent calls: how many each sub-agent name has had (its next child is `<name>-<k+1>`),
    # and every one that ended, with what it spent.
    subagent_calls: dict[str, int] = Field(default_factory=dict)
    subagents: list[SubagentRecord] = Field(default_factory=list)
    # Time model calls waited for fleet capacity (TURNKEEPER_RATE_LIMITS), and what the call in
    # flight waits for while it does.
    capacity_wait_ms: int = 0
    capacity_awaited: CapacityWait | None = None
    # `agent.skills` as the worker described them at the start (workflows/skills.py), and the
    # skills whose instructions the model has read (the `always` ones first).
    skills: list[SkillInfo] = Field(default_factory=list)
    skills_loaded: list[str] = Field(default_factory=list)
    # Whom the turn belongs to: its `StartedBy` search attribute as it started (a sub-agent's
    # turn gets its parent's). Carried, so a continued run need not trust its own start.
    started_by: str | None = None


class Turn(TurnProgress):
    request: TurnRequest
    # Not carried: each run asks (signed_decisions.signing_version) as it begins.
    signing_version: int = SIGNING_VERSION
    # Not carried: the partial reports of sub-agents cancelled with this turn, told by their
    # `subagent_cancelled` signals while it waits for them to end.
    cancelled_children: dict[str, AgentReport] = Field(default_factory=dict)

    @classmethod
    def begin(cls, request: TurnRequest, now: datetime, started_by: str | None = None) -> Turn:
        # With history_ref the earlier conversation stays in the store: the first model call
        # appends to it, and this turn's messages (and report) hold only the new exchange.
        turn = cls(
            request=request,
            started=now,
            conversation_ref=request.history_ref,
            started_by=started_by,
        )
        for message in _opening_messages(request):
            turn.messages.append(message)
            turn.unsent.append(MessageDraft(role=message.role, content=list(message.content)))
        return turn

    @classmethod
    def resume(cls, request: TurnRequest, progress: TurnProgress) -> Turn:
        """The turn a continued run goes on with."""
        return cls(request=request, **dict(progress))

    def progress(self) -> TurnProgress:
        """What the next run needs besides the request, when the turn continues as new."""
        return TurnProgress(**{name: getattr(self, name) for name in TurnProgress.model_fields})

    def begin_iteration(self) -> None:
        self.iteration += 1

    def begin_tool_interaction(self) -> None:
        """The model asked for tools: one more of `max_tool_interactions` is used."""
        self.tool_interactions += 1

    def record_model_call(self, result: ModelCallResult) -> None:
        self._bill(result)
        self.messages.append(result.message)
        self.rejected = None
        self.unsent = []
        self.conversation_ref = result.conversation_ref
        self.context_ref = result.context_ref or self.context_ref
        self.declared_approval.update(result.approval_required)
        self.tool_traits.update({traits.name: traits for traits in result.tool_traits})

    def learned_tool_traits(self) -> None:
        """Tool traits came with a call that offered tools: later calls need not ask."""
        self.traits_loaded = True

    def record_summary_call(self, result: ModelCallResult) -> None:
        """Bills a model call that wrote a compaction summary; the transcript does not change."""
        self._bill(result)

    def _bill(self, result: ModelCallResult) -> None:
        self.model_calls += 1
        self.usage = self.usage + result.usage
        self.cost_usd += result.cost_usd
        self.priced_calls.append(priced_call(self.iteration, result))
        if result.model not in self.models_used:
            self.models_used.append(result.model)

    def compact(self, cut: int, summary: str | None) -> None:
        """From now on the model sees the transcript without its messages 1..cut (replaced by
        `summary`, or by a note); the next call sends that view whole, as a new conversation."""
        self._remember_whole()
        self.context_window.cut = cut
        self.context_window.summary = summary
        self.context_window.compactions += 1
        self.resend_everything()

    def continue_compacted(self, cut: int, summary: str | None) -> None:
        """Sends the earlier conversation as the turn before last saw it: compacted."""
        self._remember_whole()
        self.context_window.cut = cut
        self.context_window.summary = summary
        self.resend_everything()

    def _remember_whole(self) -> None:
        if not self.whole_recorded:
            self.whole_ref = self.conversation_ref
            self.whole_count = len(self.messages) - len(self.unsent)
            self.whole_recorded = True

    def conversation(self) -> list[Message]:
        """Every message model calls answer: the earlier conversation (when it was loaded to be
        compacted), then this turn's."""
        return [*self.earlier, *self.messages]

    def sent_messages(self) -> list[Message]:
        """The conversation as model calls see it: all of it, unless compacted."""
        return self.context_window.view(self.conversation())

    def record_tool_results(self, results: list[Settled]) -> None:
        """Appends one user message with a `tool_result` per call, in call order. A result that
        a tool activity already stored travels to the next model call as its reference."""
        self.messages.append(Message(role="user", content=[s.result for s in results]))
        drafts: list[ContentBlock | BlockRef] = [
            BlockRef(ref=s.stored_ref) if s.stored_ref else s.result for s in results
        ]
        self.unsent.append(MessageDraft(role="user", content=drafts))

    def discovered_mcp_tools(
        self, specs: dict[str, McpToolSpec], traits: dict[str, ToolTraits]
    ) -> None:
        """The MCP tools the turn offers, found at its start, and how each one runs."""
        self.mcp_tools = specs
        self.tool_traits.update(traits)

    def described_skills(self, skills: list[SkillInfo]) -> None:
        """The worker described the agent's skills: those always loaded are read already."""
        self.skills = list(skills)
        always = {ref.name for ref in self.request.agent.skill_refs() if ref.always}
        self.skills_loaded = [skill.name for skill in skills if skill.name in always]

    def loaded_skill(self, name: str) -> None:
        """`load_skill` returned the instructions of `name`."""
        if name not in self.skills_loaded:
            self.skills_loaded.append(name)

    def count_tool_call(self) -> None:
        """A tool call ran (a worker or MCP tool) or its caller submitted its result."""
        self.tool_calls += 1

    def number_subagent_call(self, name: str) -> int:
        """A call of sub-agent `name` begins; its number k among that sub-agent's calls."""
        self.subagent_calls[name] = self.subagent_calls.get(name, 0) + 1
        return self.subagent_calls[name]

    def record_subagent(self, record: SubagentRecord, usage: Usage) -> None:
        """A sub-agent call ended: what it spent joins this turn's own spend (and budgets)."""
        self.subagents.append(record)
        self.usage = self.usage + usage
        self.cost_usd += record.cost_usd
        self.model_calls += record.llm_calls
        self.tool_calls += record.tool_calls

    def count_correction(self) -> int:
        """The model's arguments did not fit a tool's schema and go back to it; how many times
        that has happened in this turn."""
        self.corrections += 1
        return self.corrections

    def record_decision(self, decision: DecisionRecord) -> None:
        self.decisions.append(decision)

    def start_waiting(self, now: datetime) -> None:
        """A call waits for a human or a caller: from now until it is settled, time does not
        count against the time budget."""
        self.human.start(now)

    def stop_waiting(self, now: datetime) -> None:
        self.human.stop(now)

    def follow_waits(self, pending: TurnState) -> None:
        """A turn that has not ended shows what it waits for: a budget extension first, else
        what its pending calls wait for (`pending`, "running" when none)."""
        if self.state in _LIVE_STATES:
            self.state = "awaiting_budget" if self.budget_request is not None else pending

    def end(self, state: TurnState, now: datetime) -> None:
        self.state = state
        self.ended = now
        # A turn cancelled while it waited for an extension waits for nothing now: its status
        # must not offer the extend command any more.
        self.budget_request = None

    def keep_structured_output(self, value: JsonValue) -> None:
        self.structured_output = value

    def send_back(self, correction: str, why: str) -> None:
        """The model's final answer is rejected (`why`): `correction` goes back to it, and the
        answer is kept for the report should the turn end before another."""
        self.rejected = RejectedAnswer(text=self.messages[-1].text(), why=why)
        self.append_user_text(correction)

    def load_earlier(self, messages: list[Message]) -> None:
        """The conversation this turn continues, read from the store so that compaction can
        leave its oldest exchanges out too."""
        self.earlier = messages
        self.earlier_loaded = True
        self.context_window.anchor = len(messages)

    def stored_whole_conversation(self, ref: str) -> None:
        """The turn's whole conversation (not its compacted requests') is stored under `ref`."""
        self.conversation_ref = ref

    def measured_context(self, counted_tokens: int, estimated_tokens: int) -> None:
        """A model call's input as the provider counted it, beside our estimate of what was
        sent: later estimates add what the provider counts beyond it."""
        self.context_window.measured(counted_tokens, estimated_tokens)

    def cool_down(self, model: str, until: datetime) -> None:
        """Passes `model` over in the fallback chain until `until`."""
        self.model_cooldowns[model] = until

    def cooling_until(self, model: str, now: datetime) -> datetime | None:
        until = self.model_cooldowns.get(model)
        return until if until is not None and until > now else None

    def model_answered(self, model: str) -> None:
        self.model_cooldowns.pop(model, None)

    def capacity_waited(self, waited_ms: int) -> None:
        """A model call is back: its wait for fleet capacity is over and counted."""
        self.capacity_wait_ms += waited_ms
        self.capacity_awaited = None

    def refuse_decision(
        self, call_id: str, approver: str, reason: str, now: datetime, signal: str = "approve"
    ) -> None:
        """Keeps an ignored signal (`approve`, unless `signal` names another) for the status
        query. Fields are cut short and the oldest refusals drop out, so a flood of forged
        signals cannot grow the turn's state; the count of those dropped stays, so a flood cannot
        hide the attempts it pushed out.

        Replay: only the status query reads the count; no command depends on it, so histories
        recorded before it existed replay unchanged and need no `workflow.patched` (a carry
        without the field reads as 0)."""
        refused = RefusedDecision(
            call_id=call_id[:_REFUSED_FIELD_CHARS],
            approver=approver[:_REFUSED_FIELD_CHARS],
            reason=reason[:_REFUSED_REASON_CHARS],
            at=now,
            signal=signal,
        )
        kept = [*self.refused_decisions, refused]
        self.refused_decisions_dropped += max(0, len(kept) - MAX_REFUSED_DECISIONS)
        self.refused_decisions = kept[-MAX_REFUSED_DECISIONS:]

    def verify_signatures_as(self, version: int) -> None:
        """This run verifies signing format `version`, from its first decision to its last."""
        self.signing_version = version

    def spend_star(self, key: str) -> None:
        """Remembers an applied signed '*' decision, so that a copy of it decides nothing."""
        self.spent_stars().append(key)

    def spent_stars(self) -> list[str]:
        """The spent set of this run's signing format (format 1 signatures never verify in a
        format 2 run, so its entries need not be compared there)."""
        if self.signing_version == LEGACY_SIGNING_VERSION:
            return self.spent_signatures
        return self.spent_decisions

    def request_budget(self, budget: BudgetKind, message: str, now: datetime) -> BudgetRequest:
        """Stops the turn for a human to extend `budget`; the wait does not count as time."""
        self.budget_requests += 1
        self.budget_request = BudgetRequest(
            number=self.budget_requests, budget=budget, message=message, since=now
        )
        self.human.start(now)
        return self.budget_request

    def grant_extension(
        self, extension: ExtendBudgetInput, signed: bool, now: datetime
    ) -> BudgetExtension:
        """Applies `extension` to the budget request the turn waits on and ends the wait."""
        request = self.budget_request
        assert request is not None, "an extension is validated against a waiting request"
        granted = BudgetExtension(
            request=request.number,
            budget=request.budget,
            cost_usd=extension.cost_usd,
            time_ms=extension.time_ms,
            iterations=extension.iterations,
            tool_interactions=extension.tool_interactions,
            approver=extension.approver,
            reason=extension.reason,
            signed=signed,
            at=now,
        )
        self.budget_extensions.append(granted)
        self._end_budget_request(now)
        return granted

    def give_up_budget_request(self, now: datetime) -> None:
        """Ends the wait for an extension that did not come in time."""
        self._end_budget_request(now)

    def _end_budget_request(self, now: datetime) -> None:
        self.budget_request = None
        self.human.stop(now)

    def append_user_text(self, text: str) -> None:
        """A message of the runtime's own to the model (e.g. a correction), sent with the next
        call."""
        message = Message(role="user", content=[TextBlock(text=text)])
        self.messages.append(message)
        self.unsent.append(MessageDraft(role="user", content=list(message.content)))

    def resend_everything(self) -> None:
        """Forgets the stored conversation so the next call sends it inline (the store lost it)."""
        self.conversation_ref = None
        self.context_ref = None
        self.unsent = [
            MessageDraft(role=m.role, content=list(m.content)) for m in self.sent_messages()
        ]

    def queue_steer(self, steer: Intervention, spent: str | None) -> None:
        """A `steer` was accepted: it joins the conversation at the next safe point
        (`deliver_steers`), never between a tool call and its result."""
        self.interventions.append(steer)
        self.queued_steers.append(steer)
        if spent is not None:
            self.spent_steers.append(spent)

    def deliver_steers(self) -> list[Intervention]:
        """Puts the queued steers into the conversation, just before a model call; those it
        delivered. They join the trailing user message (tool results, the task) so that roles
        keep alternating, or follow the model's last answer as a user message of their own."""
        delivered, self.queued_steers = self.queued_steers, []
        if not delivered:
            return []
        blocks: list[ContentBlock] = [TextBlock(text=steer.text) for steer in delivered]
        last = self.messages[-1] if self.messages else None
        draft = self.unsent[-1] if self.unsent else None
        if last is not None and last.role == "user" and draft is not None and draft.role == "user":
            self.messages[-1] = Message(role="user", content=[*last.content, *blocks])
            self.unsent[-1] = MessageDraft(role="user", content=[*draft.content, *blocks])
        else:
            self.messages.append(Message(role="user", content=list(blocks)))
            self.unsent.append(MessageDraft(role="user", content=list(blocks)))
        return delivered

    def record_interrupt(self, interrupt: Intervention) -> None:
        self.interventions.append(interrupt)

    def stop_every_wait(self, now: datetime) -> None:
        """The turn was interrupted while it waited for humans (calls, a budget extension):
        it waits for nothing any more, and the waits end now."""
        self.budget_request = None
        if self.human.waiting:
            self.human.waiting = 1
            self.human.stop(now)

    def active_ms(self, now: datetime) -> int:
        """Time at work since the start (until the end, once the turn ended), leaving out the
        waits for humans and callers: what counts against the time budget."""
        until = self.ended or now
        return _ms(until - self.started) - self.human.waited_ms(until)

    def elapsed_ms(self, now: datetime) -> int:
        return _ms((self.ended or now) - self.started)

    def report(self, outcome: Outcome, now: datetime) -> AgentReport:
        last = self.messages[-1] if self.messages else None
        output = last.text() if last is not None and last.role == "assistant" else ""
        if self.rejected is not None:
            output = self.rejected.text  # the last answer, not the correction after it
        return AgentReport(
            agent_id=self.request.agent.id,
            task_id=self.request.task.id,
            outcome=outcome,
            output=output,
            # A sub-agent's report travels into its parent's history: its transcript stays here.
            messages=[] if self.request.parent is not None else list(self.messages),
            usage=self.usage,
            cost_usd=round(self.cost_usd, 10),
            priced_calls=list(self.priced_calls),
            unpriced_calls=sum(call.priced_by == "unknown" for call in self.priced_calls),
            llm_calls=self.model_calls,
            tool_calls=self.tool_calls,
            iterations=self.iteration,
            duration_ms=self.elapsed_ms(now),
            models_used=list(self.models_used),
            decisions=list(self.decisions),
            budget_extensions=list(self.budget_extensions),
            interventions=list(self.interventions),
            structured_output=self.structured_output,
            conversation_ref=self.conversation_ref,
            subagents=list(self.subagents),
            tenant=self.request.tenant,
            started_by=self.started_by,
            skills_loaded=list(self.skills_loaded),
        )


def priced_call(iteration: int, result: ModelCallResult) -> PricedCall:
    """What the report says of one call's cost. A result from a worker before cost sources
    says nothing: it was priced by the table (or `agent.price`) when it cost anything."""
    priced_by = result.priced_by or ("price_table" if result.cost_usd else "unknown")
    cost = None if priced_by == "unknown" else round(result.cost_usd, 10)
    return PricedCall(iteration=iteration, model=result.model, cost_usd=cost, priced_by=priced_by)


def _opening_messages(request: TurnRequest) -> list[Message]:
    history = list(request.history)
    task = TextBlock(text=request.task.input)
    if history and history[-1].role == "user":
        # Roles must alternate: the task joins a trailing user message (e.g. tool results).
        last = history[-1]
        history[-1] = Message(role="user", content=[*last.content, task])
        return history
    return [*history, Message(role="user", content=[task])]


def _ms(delta: timedelta) -> int:
    return int(delta.total_seconds() * 1000)
