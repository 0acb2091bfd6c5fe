"""A session (`AgentSessionWorkflow`): one conversation of many turns. Its start input, the
`send` and `close` updates, the `status` query and its result, as plain JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field
from turnkeeper.contracts.activity_io import CallContext, ConversationDelta
from turnkeeper.contracts.budget_extension import BudgetRequest
from turnkeeper.contracts.claim_check import ClaimChecked
from turnkeeper.contracts.compaction import CompactedHistory
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.signals import TurnState
from turnkeeper.contracts.tenants import TenantName
from turnkeeper.contracts.turn import AgentSpec, Constraints, Outcome

# Caller-chosen ids become workflow ids and search attribute values, which no codec protects:
# ids only, never content. The pattern keeps `<session id>/turn-<n>` unambiguous.
SESSION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$"
# Finished turns the status query lists; older ones are in the Web UI (SessionId = "…").
RECENT_TURNS = 20

SessionState = Literal["idle", "running", "closed"]


class SessionRequest(ContractModel):
    """The session's start input: the agent of every turn and the default constraints of each.
    `constraints.cost_budget_usd` is the budget of the whole session."""

    model_config = ConfigDict(extra="forbid")
    agent: AgentSpec
    """The agent of every turn."""
    session_id: str = Field(pattern=SESSION_ID_PATTERN)
    """The session's id; must equal the workflow id."""
    constraints: Constraints = Field(default_factory=Constraints)
    """Each turn's default constraints; `cost_budget_usd` is the whole session's."""
    tenant: TenantName | None = None
    """The tenant every turn of the session is billed to (`TurnRequest.tenant`)."""


class SendInput(ContractModel):
    """The `send` update: the user's next message, and constraints of this turn only (each
    field given replaces the session's default; the cost budget is capped by what is left)."""

    model_config = ConfigDict(extra="forbid")
    input: str = Field(min_length=1)
    """The user's next message."""
    constraints: Constraints | None = None
    """Constraints of this turn only; None: the session's defaults."""


class SendResult(ContractModel):
    """The `send` update's answer, once the turn has started."""

    turn_workflow_id: str
    """The started turn's workflow id, `<session id>/turn-<n>`."""


class CloseInput(ContractModel):
    """The `close` update's payload (optional)."""

    model_config = ConfigDict(extra="forbid")
    reason: str = Field(default="", max_length=1000)
    """Why the session is closed; kept as `SessionStatus.closed_reason`."""


class SessionTurn(ContractModel):
    """One finished turn of the session."""

    number: int
    """The n of `<session id>/turn-<n>`."""
    turn_workflow_id: str
    """The turn's workflow id."""
    outcome: Outcome
    """How it ended: its report's `outcome`."""
    cost_usd: float = 0.0
    """What it cost."""
    error_type: str | None = None
    """Of a failed turn: the contract's error type (`TurnCancelled` for a cancelled one)."""
    joined_conversation: bool = True
    """False: the turn ended without an answer, so its exchange did not join the
    conversation."""


class SessionStatus(ContractModel):
    """The `status` query of a session, and its result once closed."""

    state: SessionState
    """`idle`, `running` or `closed`; the `SessionState` search attribute."""
    session_id: str
    """The session's id, which is its workflow id."""
    agent_id: str
    """The `agent.id` of its turns."""
    turns: int = 0
    """Turns started."""
    cost_usd: float = 0.0
    """The cost of every turn so far."""
    cost_budget_usd: float | None = None
    """The session's budget, `constraints.cost_budget_usd` of its start input. None:
    unlimited."""
    running_turn_id: str | None = None
    """The workflow id of the turn running now."""
    running_turn_state: TurnState | None = None
    """What the running turn does: `running`, or waiting for a human (`awaiting_approval`,
    `awaiting_external`, `awaiting_budget`, with its `budget_request`); the turn's own
    `status` query has the details."""
    budget_request: BudgetRequest | None = None
    """The running turn's, when it waits for a budget extension."""
    cost_extended_usd: float = 0.0
    """Cost budget extensions granted to its turns: they extend the session's budget too."""
    conversation_ref: str | None = None
    """The stored conversation so far (the next turn's `history_ref`)."""
    messages: int = 0
    """Messages in the conversation."""
    recent_turns: list[SessionTurn] = Field(default_factory=list)
    """The last `RECENT_TURNS` finished turns; older ones are in the Web UI
    (`SessionId = "…"`)."""
    started: datetime | None = None
    """When the session started."""
    closed_reason: str | None = None
    """The `close` update's reason, once closed."""

    def cost_left_usd(self) -> float | None:
        """What the session may still spend, extensions included; None: unlimited."""
        if self.cost_budget_usd is None:
            return None
        return max(0.0, self.cost_budget_usd + self.cost_extended_usd - self.cost_usd)


class LoadConversationInput(ContractModel):
    """The `load_conversation` activity's input."""

    conversation_ref: str
    """The stored conversation to read back."""


class LoadedConversation(ContractModel, ClaimChecked):
    """A stored conversation read back; claim-checked, so history keeps only its reference."""

    messages: list[Message] = Field(default_factory=list)
    """The conversation's messages, oldest first."""


class StoreConversationInput(ContractModel, ClaimChecked):
    """A conversation to store without a model call: `conversation.append` on top of
    `conversation.base`, or, without a base, on a new chain rooted at `context`. A compacted
    turn stores its whole (uncompacted) conversation this way, so that the turn after it
    continues everything that was said, not what the compacted requests showed the model."""

    conversation: ConversationDelta
    """What to store: `append` on top of `base`."""
    context: CallContext | None = None
    """Without a base: the context the new chain is rooted at."""


class StoredConversation(ContractModel):
    """The `store_conversation` activity's result."""

    conversation_ref: str
    """The stored conversation, the appended messages included."""


class TurnStateNote(ContractModel):
    """The `turn_state` signal a session's turn sends its session when it starts or stops
    waiting for a human."""

    turn_workflow_id: str
    """The turn that sends it."""
    state: TurnState
    """The turn's state now."""
    budget_request: BudgetRequest | None = None
    """When the turn waits for a budget extension: what it waits for."""


class CarriedSession(ContractModel):
    """What a session hands to its next run: references and figures, never the conversation
    (the next run reads it back from the store by `conversation_ref`)."""

    turns: int
    """Turns started so far."""
    cost_usd: float
    """The cost of every turn so far."""
    cost_extended_usd: float = 0.0
    """Cost budget extensions granted to its turns so far."""
    conversation_ref: str | None = None
    """The stored conversation so far."""
    history_compaction: CompactedHistory | None = None
    """How the last compacted turn's requests saw the conversation: the next turn goes on from
    there instead of compacting the whole conversation again."""
    recent_turns: list[SessionTurn] = Field(default_factory=list)
    """The last finished turns, as the status query lists them."""
    started: datetime
    """When the session's first run started."""
