"""The deterministic state one turn owns: the transcript, where the turn stands, and the clock of
time that counts against the budget, with the rest in parts that own theirs
(workflows/turn_parts.py: spend, tools, approvals, budget waits, compaction, steers, sub-agents,
fleet waits, fallback cooldowns). Every change is a method, of `Turn` where it spans parts, of a
part where it does not, named for what happened; the rest of the workflow reads it. It never
does I/O. It is a pydantic model so that a long turn carries it across continue-as-new
(`TurnProgress`, everything but the request, which travels as the run's first argument)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, NamedTuple

from pydantic import (
    BaseModel,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.activity_io import BlockRef, MessageDraft, ModelCallResult
    from turnkeeper.contracts.attachments import AttachmentBlock
    from turnkeeper.contracts.budget_extension import (
        BudgetExtension,
        BudgetKind,
        BudgetRequest,
        ExtendBudgetInput,
    )
    from turnkeeper.contracts.messages import ContentBlock, Message, TextBlock, ToolResultBlock
    from turnkeeper.contracts.sandbox_io import sandbox_report
    from turnkeeper.contracts.signals import TurnState
    from turnkeeper.contracts.skill_io import SkillInfo
    from turnkeeper.contracts.steering import Intervention
    from turnkeeper.contracts.turn import AgentReport, Outcome, SubagentRecord, TurnRequest, Usage
    from turnkeeper.workflows.guardrails.decisions import GuardrailLog
    from turnkeeper.workflows.policies.log import PolicyLog
    from turnkeeper.workflows.turn_parts import (
        Approvals,
        BudgetWaits,
        Compaction,
        Cooldowns,
        FleetWaits,
        Spend,
        Steers,
        Subagents,
        Tools,
        flat_parts,
        lifted_parts,
    )

# The states a turn leaves by ending; the others follow its pending calls and budget requests.
_LIVE_STATES = (
    "running",
    "awaiting_approval",
    "awaiting_external",
    "awaiting_budget",
    "waiting",
)


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

    def stop_all(self, now: datetime) -> None:
        """Every wait ends now, however many there were."""
        if self.waiting:
            self.waiting = 1
            self.stop(now)

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
    """Everything a turn has done so far: what it carries across continue-as-new.

    Its payload stays flat, each part's fields at the top as before there were parts (the
    validator gathers them into their parts, the serializer puts them back): a run carried by a
    build from before parts loads here unchanged, and, as a deploy can be rolled back, a build
    from before parts loads what this one carries, where a nested shape would load as a turn
    that had done nothing (pydantic ignores keys it does not know)."""

    started: datetime
    messages: list[Message] = Field(default_factory=list)
    # Messages appended since the last model call, as they will be sent to the next one.
    unsent: list[MessageDraft] = Field(default_factory=list)
    conversation_ref: str | None = None
    context_ref: str | None = None
    state: TurnState = "running"
    iteration: int = 0
    human: HumanClock = Field(default_factory=HumanClock)
    structured_output: JsonValue = None
    rejected: RejectedAnswer | None = None  # the last final answer sent back, until the next
    ended: datetime | None = None
    # Whom the turn belongs to: its `StartedBy` search attribute as it started (a sub-agent's
    # turn gets its parent's). Carried, so a continued run need not trust its own start.
    started_by: str | None = None
    spend: Spend = Field(default_factory=Spend)
    tools: Tools = Field(default_factory=Tools)
    approvals: Approvals = Field(default_factory=Approvals)
    budget: BudgetWaits = Field(default_factory=BudgetWaits)
    compaction: Compaction = Field(default_factory=Compaction)
    steers: Steers = Field(default_factory=Steers)
    children: Subagents = Field(default_factory=Subagents)
    fleet: FleetWaits = Field(default_factory=FleetWaits)
    fallback: Cooldowns = Field(default_factory=Cooldowns)
    guardrails: GuardrailLog = Field(default_factory=GuardrailLog)
    policies: PolicyLog = Field(default_factory=PolicyLog)

    @model_validator(mode="before")
    @classmethod
    def _gather_parts(cls, data: Any) -> Any:
        return lifted_parts(data)

    @model_serializer(mode="wrap")
    def _flatten_parts(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return flat_parts(handler(self))


class Turn(TurnProgress):
    request: TurnRequest
    # The schedule that started the turn (`TemporalScheduledById`): not carried, as every run of
    # a continued turn has the attribute and the id it was read from.
    schedule: str | None = None

    @classmethod
    def begin(
        cls,
        request: TurnRequest,
        now: datetime,
        started_by: str | None = None,
        schedule: str | None = None,
    ) -> Turn:
        # With history_ref the earlier conversation stays in the store: the first model call
        # appends to it, and this turn's messages (and report) hold only the new exchange.
        turn = cls(
            request=request,
            started=now,
            conversation_ref=request.history_ref,
            started_by=started_by,
            schedule=schedule,
        )
        turn._open()
        return turn

    def _open(self) -> None:
        for message in _opening_messages(self.request):
            self.messages.append(message)
            self.unsent.append(MessageDraft(role=message.role, content=list(message.content)))

    def attachments_stored(self, stored: list[AttachmentBlock]) -> None:
        """The request's attachments are in the content store (`stored`, in order): from now
        on the turn, its messages and the request it carries on hold their references only.
        Called before the first model call, while the opening messages are all there is."""
        given = iter(stored)
        task_input = [
            block if isinstance(block, TextBlock) else next(given)
            for block in self.request.task.input
        ]
        task = self.request.task.model_copy(update={"input": task_input})
        self.request = self.request.model_copy(update={"task": task})
        self.messages.clear()
        self.unsent.clear()
        self._open()

    @classmethod
    def resume(
        cls, request: TurnRequest, progress: TurnProgress, schedule: str | None = None
    ) -> Turn:
        """The turn a continued run goes on with."""
        return cls(request=request, schedule=schedule, **dict(progress))

    def progress(self) -> TurnProgress:
        """What the next run needs besides the request, when the turn continues as new."""
        return TurnProgress(**{name: getattr(self, name) for name in TurnProgress.model_fields})

    def begin_iteration(self) -> None:
        self.iteration += 1

    def record_model_call(self, result: ModelCallResult) -> None:
        self.spend.bill(self.iteration, result)
        self.policies.ruled(result.policy_rulings)
        self.messages.append(result.message)
        self.rejected = None
        self.unsent = []
        self.conversation_ref = result.conversation_ref
        self.context_ref = result.context_ref or self.context_ref
        self.tools.learned_from(result)

    def record_summary_call(self, result: ModelCallResult) -> None:
        """Bills a model call that wrote a compaction summary; the transcript does not change."""
        self.spend.bill(self.iteration, result)

    def compact(self, cut: int, summary: str | None) -> None:
        """From now on the model sees the transcript without its messages 1..cut (replaced by
        `summary`, or by a note); the next call sends that view whole, as a new conversation."""
        self.compaction.compacted(cut, summary, *self._whole())
        self.resend_everything()

    def continue_compacted(self, cut: int, summary: str | None) -> None:
        """Sends the earlier conversation as the turn before last saw it: compacted."""
        self.compaction.continued(cut, summary, *self._whole())
        self.resend_everything()

    def _whole(self) -> tuple[str | None, int]:
        """The stored conversation as it stands, and how many of this turn's messages it holds."""
        return self.conversation_ref, len(self.messages) - len(self.unsent)

    def conversation(self) -> list[Message]:
        """Every message model calls answer: the earlier conversation (when it was loaded to be
        compacted), then this turn's."""
        return [*self.compaction.earlier, *self.messages]

    def sent_messages(self) -> list[Message]:
        """The conversation as model calls see it: all of it, unless compacted."""
        return self.compaction.context_window.view(self.conversation())

    def described_skills(self, skills: list[SkillInfo]) -> None:
        """The worker described the agent's skills: those always loaded are read already."""
        always = {ref.name for ref in self.request.agent.skill_refs() if ref.always}
        self.tools.described_skills(skills, always)

    def record_tool_results(self, results: list[Settled]) -> None:
        """Appends one user message with a `tool_result` per call, in call order. A result that
        a tool activity already stored travels to the next model call as its reference."""
        self.messages.append(Message(role="user", content=[s.result for s in results]))
        drafts: list[ContentBlock | BlockRef] = [
            BlockRef(ref=s.stored_ref) if s.stored_ref else s.result for s in results
        ]
        self.unsent.append(MessageDraft(role="user", content=drafts))

    def record_subagent(self, record: SubagentRecord, usage: Usage) -> None:
        """A sub-agent call ended: what it spent joins this turn's own spend (and budgets)."""
        self.children.record(record)
        self.spend.add_subagent(record, usage)

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
            self.state = "awaiting_budget" if self.budget.budget_request is not None else pending

    def end(self, state: TurnState, now: datetime) -> None:
        self.state = state
        self.ended = now
        # A turn cancelled while it waited for an extension waits for nothing now: its status
        # must not offer the extend command any more.
        self.budget.withdraw()

    def keep_structured_output(self, value: JsonValue) -> None:
        self.structured_output = value

    def send_back(self, correction: str, why: str) -> None:
        """The model's final answer is rejected (`why`): `correction` goes back to it, and the
        answer is kept for the report should the turn end before another."""
        self.rejected = RejectedAnswer(text=self.messages[-1].text(), why=why)
        self.append_user_text(correction)

    def redact_task_input(self, text: str) -> None:
        """An enforced guardrail replaced the task input, before any model call read it."""
        for message in (self.messages[-1], self.unsent[-1]):
            task = message.content[-1]
            assert isinstance(task, TextBlock)  # the opening message ends with the task
            message.content[-1] = TextBlock(text=text)

    def redact_answer(self, text: str) -> None:
        """An enforced guardrail replaced (or withheld) the final answer: the report and the
        transcript hold `text` instead; a structured output parsed from the answer goes too."""
        self.messages[-1] = Message(role="assistant", content=[TextBlock(text=text)])
        self.structured_output = None

    def stored_whole_conversation(self, ref: str) -> None:
        """The turn's whole conversation (not its compacted requests') is stored under `ref`."""
        self.conversation_ref = ref

    def request_budget(self, budget: BudgetKind, message: str, now: datetime) -> BudgetRequest:
        """Stops the turn for a human to extend `budget`; the wait does not count as time."""
        request = self.budget.ask(budget, message, now)
        self.human.start(now)
        return request

    def grant_extension(
        self, extension: ExtendBudgetInput, signed: bool, now: datetime
    ) -> BudgetExtension:
        """Applies `extension` to the budget request the turn waits on and ends the wait."""
        granted = self.budget.grant(extension, signed, now)
        self.human.stop(now)
        return granted

    def give_up_budget_request(self, now: datetime) -> None:
        """Ends the wait for an extension that did not come in time."""
        self.budget.withdraw()
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

    def deliver_steers(self) -> list[Intervention]:
        """Puts the queued steers into the conversation, just before a model call; those it
        delivered. They join the trailing user message (tool results, the task) so that roles
        keep alternating, or follow the model's last answer as a user message of their own."""
        delivered = self.steers.take_queued()
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

    def stop_every_wait(self, now: datetime) -> None:
        """The turn was interrupted while it waited for humans (calls, a budget extension):
        it waits for nothing any more, and the waits end now."""
        self.budget.withdraw()
        self.human.stop_all(now)

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
        spend = self.spend
        return AgentReport(
            agent_id=self.request.agent.id,
            task_id=self.request.task.id,
            outcome=outcome,
            output=output,
            # A sub-agent's report travels into its parent's history: its transcript stays here.
            messages=[] if self.request.parent is not None else list(self.messages),
            usage=spend.usage,
            cost_usd=round(spend.cost_usd, 10),
            priced_calls=list(spend.priced_calls),
            unpriced_calls=sum(call.priced_by == "unknown" for call in spend.priced_calls),
            llm_calls=spend.model_calls,
            tool_calls=spend.tool_calls,
            iterations=self.iteration,
            duration_ms=self.elapsed_ms(now),
            models_used=list(spend.models_used),
            decisions=list(self.approvals.decisions),
            budget_extensions=list(self.budget.budget_extensions),
            interventions=list(self.steers.interventions),
            structured_output=self.structured_output,
            conversation_ref=self.conversation_ref,
            subagents=list(self.children.subagents),
            tenant=self.request.tenant,
            started_by=self.started_by,
            schedule=self.schedule,
            skills_loaded=list(self.tools.skills_loaded),
            guardrail_decisions=list(self.guardrails.guardrail_decisions),
            policy_decisions=list(self.policies.policy_decisions),
            sandbox=sandbox_report(self.tools.sandbox),
        )


def _opening_messages(request: TurnRequest) -> list[Message]:
    history = list(request.history)
    given = request.task.input
    task: list[ContentBlock] = [TextBlock(text=given)] if isinstance(given, str) else list(given)
    if history and history[-1].role == "user":
        # Roles must alternate: the task joins a trailing user message (e.g. tool results).
        last = history[-1]
        history[-1] = Message(role="user", content=[*last.content, *task])
        return history
    return [*history, Message(role="user", content=task)]


def _ms(delta: timedelta) -> int:
    return int(delta.total_seconds() * 1000)
