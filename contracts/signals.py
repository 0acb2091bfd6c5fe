"""Signal payloads and query results."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from turnkeeper.contracts.budget_extension import BudgetExtension, BudgetRequest
from turnkeeper.contracts.decision_signing import DECISION, Signature, decision_fields, sign

if TYPE_CHECKING:  # cryptography is imported once, by decision_signing (see there why)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

TurnState = Literal[
    "running",
    "awaiting_approval",
    "awaiting_external",
    "awaiting_budget",
    "completed",
    "failed",
    "cancelled",
]
PendingKind = Literal["approval", "external"]


ALL_PENDING = "*"
# The status query lists this many of the latest refused decisions.
MAX_REFUSED_DECISIONS: Final = 20


class ApproveInput(BaseModel):
    """The payload of the `approve` signal and of the `decide` update."""

    model_config = ConfigDict(extra="forbid")
    call_id: str = Field(min_length=1)  # or "*": every call of the turn waiting for approval
    approved: bool
    reason: str = ""
    remember: bool = False
    approver: str = ""
    # Replacement arguments for the call (edit before approve); checked against its schema.
    input: dict[str, JsonValue] | None = None
    # Required when the agent's approvers have public keys (contracts/decision_signing.py).
    signature: Signature | None = None

    def signed_fields(self, workflow_id: str, agent_id: str, tool: str) -> dict[str, JsonValue]:
        """What the approver's signature covers, for the call of `tool` (`*` for every waiting
        call) in the turn `workflow_id` of agent `agent_id`."""
        return decision_fields(
            workflow_id=workflow_id,
            agent_id=agent_id,
            call_id=self.call_id,
            tool=tool,
            approved=self.approved,
            input=self.input,
            reason=self.reason,
            remember=self.remember,
            approver=self.approver,
        )

    def signed_with(
        self,
        private_key: Ed25519PrivateKey,
        workflow_id: str,
        agent_id: str,
        tool: str,
        expires: datetime,
    ) -> ApproveInput:
        """This decision on a call of `tool` in the turn `workflow_id` of agent `agent_id`,
        signed until `expires`."""
        fields = self.signed_fields(workflow_id, agent_id, tool)
        signature = sign(private_key, DECISION, fields, expires)
        return self.model_copy(update={"signature": signature})


class DecisionRecord(BaseModel):
    """One settled approval, as the report and the `decisions` query show it."""

    call_id: str
    tool: str
    approved: bool
    approver: str = ""
    reason: str = ""
    edited: bool = False
    standing: bool = False  # approved by a standing approval (remember: true earlier)
    signed: bool = False  # the approver's signature (or the standing grant's) was verified
    at: datetime


class RefusedDecision(BaseModel):
    """An `approve` signal the turn ignored, and why: a signal has no other way to answer."""

    call_id: str
    approver: str = ""
    reason: str
    at: datetime


class DecideResult(BaseModel):
    """What the `decide` update applied."""

    decisions: list[DecisionRecord]


class SubmitToolResultInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    call_id: str = Field(min_length=1)
    output: JsonValue = None
    is_error: bool = False


class PendingCall(BaseModel):
    call_id: str
    tool: str
    input: dict[str, JsonValue]
    kind: PendingKind
    since: datetime


class TurnStatus(BaseModel):
    """The `status` query's answer: where a turn is and what it waits for.

    Attributes:
        elapsed_ms: Time the turn has worked, excluding the time it waited for humans (approvals,
            external results, budget extensions): the time that counts against
            `time_budget_ms`. The report's `duration_ms` is the wall-clock time, waits included.
    """

    state: TurnState
    agent_id: str = ""  # what a signed decision binds, besides the workflow and call ids
    iteration: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    cost_usd: float = 0.0
    elapsed_ms: int = Field(
        default=0,
        description="Time worked, excluding waits for humans: what counts against the time "
        "budget (the report's duration_ms includes them).",
    )
    pending: list[PendingCall] = Field(default_factory=list)
    # The latest `approve` signals that were ignored (unsigned, forged, expired, stale), newest
    # last; at most MAX_REFUSED_DECISIONS.
    refused_decisions: list[RefusedDecision] = Field(default_factory=list)
    # In state `awaiting_budget`: the budget the turn waits to have extended.
    budget_request: BudgetRequest | None = None
    budget_extensions: list[BudgetExtension] = Field(default_factory=list)

    def signed_tool(self, call_id: str) -> str | None:
        """The tool a signed decision on `call_id` names: `*` for every waiting call, else the
        waiting call's tool; None when no such call waits."""
        if call_id == ALL_PENDING:
            return ALL_PENDING
        return next((call.tool for call in self.pending if call.call_id == call_id), None)
