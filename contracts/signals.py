"""Signal payloads and query results."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final, Literal

from pydantic import ConfigDict, Field, JsonValue
from turnkeeper.contracts.budget_extension import BudgetExtension, BudgetRequest
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.decision_signing import (
    DECISION,
    LEGACY_SIGNING_VERSION,
    SIGNING_VERSION,
    Signature,
    decision_fields,
    input_digest,
    sign,
)
from turnkeeper.contracts.guardrails import GuardrailDecision
from turnkeeper.contracts.policies import PolicyDecision
from turnkeeper.contracts.rate_limits import CapacityWait
from turnkeeper.contracts.steering import Intervention
from turnkeeper.contracts.subagents import SubagentRecord
from turnkeeper.contracts.waits import WaitingFor
from turnkeeper.contracts.write_preview import WritePreview

if TYPE_CHECKING:  # cryptography is imported once, by decision_signing (see there why)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

TurnState = Literal[
    "running",
    "awaiting_approval",
    "awaiting_external",
    "awaiting_budget",
    "waiting",
    "completed",
    "interrupted",
    "failed",
    "cancelled",
]
PendingKind = Literal["approval", "external", "elicitation"]


ALL_PENDING = "*"
# The status query lists this many of the latest refused decisions.
MAX_REFUSED_DECISIONS: Final = 20


@dataclass(frozen=True)
class SignedCall:
    """What a signed decision is about, besides the decision itself: the turn, its agent, and
    the call's tool and input as the model sent them (for `*`, every waiting call: tool `*` and
    no input). The `status` query has all of it (`TurnStatus.signed_call`)."""

    workflow_id: str
    agent_id: str
    tool: str
    call_input: dict[str, JsonValue] | None = None
    # The turn's first run id, where its signing format binds it (3); None before.
    first_run_id: str | None = None


class ApproveInput(ContractModel):
    """The payload of the `approve` signal and of the `decide` update."""

    model_config = ConfigDict(extra="forbid")
    call_id: str = Field(min_length=1)
    """The waiting call, or "*": every call of the turn waiting for approval."""
    approved: bool
    """The verdict; a rejection gives the model an `is_error` result carrying `reason`. On an
    MCP server's question (kind `elicitation`): true accepts with `input` as the answer, false
    declines, and false with `reason: "cancel"` cancels."""
    reason: str = ""
    """Why."""
    remember: bool = False
    """With an approval: the agent may run this tool without asking from now on (a standing
    approval)."""
    approver: str = ""
    """Who decides; must be one of `agent.approvers` when that is set."""
    input: dict[str, JsonValue] | None = None
    """Replacement arguments for the call (edit before approve); checked against its schema.
    The model is told of the edit. On an MCP server's question: the answer, checked against the
    server's requested schema."""
    signature: Signature | None = None
    """Required when the agent's approvers have public keys (contracts/decision_signing.py)."""

    def signed_fields(
        self, call: SignedCall, version: int = SIGNING_VERSION
    ) -> dict[str, JsonValue]:
        """What the approver's signature covers, for `call`, in signing format `version`.

        Raises:
            ValueError: The call's input holds a value canonical JSON cannot express.
        """
        digest = None
        if call.call_input is not None and version != LEGACY_SIGNING_VERSION:
            digest = input_digest(call.call_input)
        return decision_fields(
            workflow_id=call.workflow_id,
            agent_id=call.agent_id,
            call_id=self.call_id,
            tool=call.tool,
            approved=self.approved,
            input=self.input,
            reason=self.reason,
            remember=self.remember,
            approver=self.approver,
            call_input_sha256=digest,
            version=version,
            first_run_id=call.first_run_id,
        )

    def signed_with(
        self,
        private_key: Ed25519PrivateKey,
        call: SignedCall,
        expires: datetime,
        version: int = SIGNING_VERSION,
    ) -> ApproveInput:
        """This decision on `call`, signed in format `version` (the turn's `signing_version`)
        until `expires`."""
        signature = sign(private_key, DECISION, self.signed_fields(call, version), expires, version)
        return self.model_copy(update={"signature": signature})


class DecisionRecord(ContractModel):
    """One settled approval, as the report and the `decisions` query show it."""

    call_id: str
    """The decided call."""
    tool: str
    """The decided call's tool."""
    approved: bool
    """The verdict."""
    approver: str = ""
    """Who decided."""
    reason: str = ""
    """Why (the model reads a rejection's reason)."""
    edited: bool = False
    """The decision replaced the call's arguments."""
    standing: bool = False
    """Approved by a standing approval (`remember: true` earlier), without asking."""
    signed: bool = False
    """The approver's signature (or the standing approval's signed grant) was verified."""
    at: datetime
    """When the decision was applied."""


class RefusedDecision(ContractModel):
    """A signal the turn ignored, and why: a signal has no other way to answer. Mostly
    `approve` signals (unsigned, forged, stale); any signal that arrived unencrypted where the
    worker requires encryption."""

    call_id: str
    """The call the signal named."""
    approver: str = ""
    """The approver the signal named."""
    reason: str
    """Why the signal was ignored."""
    at: datetime
    """When it was ignored."""
    signal: str = "approve"
    """The signal's name (`submit_tool_result` too, where the worker requires encryption).
    Refusals listed before this field was recorded were all `approve`."""


class DecideResult(ContractModel):
    """What the `decide` update applied."""

    decisions: list[DecisionRecord]
    """The decisions the update applied."""


class SubmitToolResultInput(ContractModel):
    """The payload of the `submit_tool_result` signal: the result of an external tool's call."""

    model_config = ConfigDict(extra="forbid")
    call_id: str = Field(min_length=1)
    """The external call answered."""
    output: JsonValue = None
    """The result; a string reaches the model as it is, anything else as JSON."""
    is_error: bool = False
    """The call failed."""


class PendingCall(ContractModel):
    """A tool call that waits for a human or the caller (`TurnStatus.pending`,
    `turnkeeper.PendingCall`)."""

    call_id: str
    """The waiting call."""
    tool: str
    """The waiting call's tool."""
    input: dict[str, JsonValue]
    """The call's arguments, as the model sent them."""
    kind: PendingKind
    """`approval`: waits for a decision; `external`: waits for `submit_tool_result`;
    `elicitation`: the call's MCP server asked a question (`message`, `requested_schema`), which
    `decide` answers (contracts/mcp_elicitation.py)."""
    since: datetime
    """When it began to wait."""
    workflow_id: str | None = None
    """Of a sub-agent's call, listed by its ancestors: the child turn where the call waits (an
    `approve` or `decide` sent to an ancestor is applied there). None: this turn's own call."""
    agent_id: str | None = None
    """Of a sub-agent's call: the child's `agent.id`, which a signed decision on it binds."""
    first_run_id: str | None = None
    """Of a sub-agent's call, where the child verifies signing format 3: the child's first run
    id, which a signed decision on it binds."""
    message: str | None = None
    """Of kind `elicitation`: what the MCP server asks, as it wrote it."""
    requested_schema: dict[str, JsonValue] | None = None
    """Of kind `elicitation`: the JSON Schema the answer (`decide`'s `input`) must fit."""
    said: str | None = None
    """The text the model wrote before the call, in the same answer (its last words before
    it; the last `MAX_SAID_CHARS` characters). None: it wrote none."""
    preview: WritePreview | None = None
    """Of a built-in `write_file` call that waits for approval: the file's difference, as the
    worker saw it when the call began to wait."""


class SubagentPending(ContractModel):
    """The `subagent_pending` signal a sub-agent's turn sends its parent whenever the calls
    waiting in it (or in its own sub-agents) change: the parent lists them in its `status`
    and relays them up, and an `approve` or `decide` sent to any ancestor reaches the call."""

    workflow_id: str
    """The child turn that sends it."""
    pending: list[PendingCall] = Field(default_factory=list)
    """Every call that waits in it or below it, each with the `workflow_id` where it waits."""


class TurnStatus(ContractModel):
    """The `status` query's answer (`turnkeeper.TurnStatus`): where a turn is and what it waits
    for."""

    state: TurnState
    """Where the turn is; the `TurnState` search attribute."""
    agent_id: str = ""
    """The request's `agent.id`: what a signed decision binds, besides the workflow and call
    ids."""
    signing_version: int = LEGACY_SIGNING_VERSION
    """The signing format the turn verifies (contracts/decision_signing.py); workers from before
    format 2 do not say, and verify format 1."""
    first_run_id: str | None = None
    """The run id of the turn's first run (Temporal's `first_execution_run_id`, the same across
    continue-as-new), which signatures bind from signing format 3; workers from before format 3
    do not say."""
    iteration: int = 0
    """The current iteration."""
    llm_calls: int = 0
    """Model calls so far."""
    tool_calls: int = 0
    """Tool calls so far."""
    cost_usd: float = 0.0
    """What the turn has cost so far."""
    elapsed_ms: int = 0
    """Time the turn has worked, excluding the time it waited for humans (approvals, external
    results, budget extensions): the time that counts against `time_budget_ms`. The report's
    `duration_ms` is the wall-clock time, waits included."""
    pending: list[PendingCall] = Field(default_factory=list)
    """Calls waiting for a human or the caller."""
    refused_decisions: list[RefusedDecision] = Field(default_factory=list)
    """The latest signals that were ignored (`approve` unsigned, forged, expired or stale; any
    signal that arrived unencrypted where encryption is required), newest last; at most
    `MAX_REFUSED_DECISIONS`."""
    refused_decisions_dropped: int = 0
    """How many older ones were pushed out of `refused_decisions` (a flood hides none
    unseen)."""
    budget_request: BudgetRequest | None = None
    """In state `awaiting_budget`: the budget the turn waits to have extended."""
    budget_extensions: list[BudgetExtension] = Field(default_factory=list)
    """The budget extensions applied so far."""
    interventions: list[Intervention] = Field(default_factory=list)
    """The steers and the interrupt applied so far (a queued steer too, before its model
    call)."""
    subagents: list[SubagentRecord] = Field(default_factory=list)
    """The sub-agent calls that have ended so far (`AgentReport.subagents`)."""
    started_by: str | None = None
    """The identity that started the turn (`AgentReport.started_by`)."""
    schedule: str | None = None
    """The schedule that started the turn (`AgentReport.schedule`)."""
    skills_loaded: list[str] = Field(default_factory=list)
    """The skills whose instructions the model has read so far (`AgentReport.skills_loaded`)."""
    guardrail_decisions: list[GuardrailDecision] = Field(default_factory=list)
    """Every guardrail verdict so far (`AgentReport.guardrail_decisions`)."""
    capacity_wait_ms: int = 0
    """Time the turn's model calls waited for fleet capacity (`TURNKEEPER_RATE_LIMITS`); it
    counts in `elapsed_ms` and against `time_budget_ms`."""
    capacity_awaited: CapacityWait | None = None
    """While a model call waits for fleet capacity: the limit key and the limit it waits on."""
    policy_decisions: list[PolicyDecision] = Field(default_factory=list)
    """The policy decisions so far (`AgentReport.policy_decisions`)."""
    waiting_for: list[WaitingFor] = Field(default_factory=list)
    """While the turn is `waiting`: each `wait` call in progress, its reason and until when."""

    def signed_call(self, workflow_id: str, call_id: str) -> SignedCall | None:
        """What a signed decision on `call_id` of this turn (`workflow_id`) binds: `*` for every
        waiting call, else the waiting call's tool and input; None when no such call waits."""
        run = self.signed_run_id()
        if call_id == ALL_PENDING:
            return SignedCall(workflow_id, self.agent_id, ALL_PENDING, first_run_id=run)
        call = next((call for call in self.pending if call.call_id == call_id), None)
        if call is None:
            return None
        if call.workflow_id is not None:
            # A sub-agent's call is decided (and its signature verified) in the child turn.
            agent, run = call.agent_id or self.agent_id, call.first_run_id
            return SignedCall(call.workflow_id, agent, call.tool, call.input, run)
        return SignedCall(workflow_id, self.agent_id, call.tool, call.input, run)

    def signed_run_id(self) -> str | None:
        """The first run id a signature for this turn binds: None where its format binds none."""
        return self.first_run_id if self.signing_version >= SIGNING_VERSION else None
