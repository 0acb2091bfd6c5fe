"""Budgets a human can extend: with `constraints.on_budget_exhausted: "pause"`, a turn that would
exceed a budget waits in state `awaiting_budget` for the `extend_budget` update instead of
failing.

A signed extension covers, under its own signing kind (`budget-extension`, never `decision`),
the turn's workflow id and agent id, the number of the budget request it answers and every
amount, so that it cannot pass for a tool decision, be replayed onto another turn or onto a later
request of the same turn, or have its amounts changed.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Final, Literal

from pydantic import ConfigDict, Field, JsonValue, model_validator
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.decision_signing import (
    BUDGET_EXTENSION,
    SIGNING_VERSION,
    Signature,
    sign,
)

if TYPE_CHECKING:  # cryptography is imported once, by decision_signing (see there why)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

BudgetKind = Literal["cost", "time", "iterations", "tool_interactions"]
OnBudgetExhausted = Literal["fail", "pause"]

# The payload field that extends each budget.
AMOUNT_FIELDS: Final[dict[BudgetKind, str]] = {
    "cost": "cost_usd",
    "time": "time_ms",
    "iterations": "iterations",
    "tool_interactions": "tool_interactions",
}


class ExtendBudgetInput(ContractModel):
    """The payload of the `extend_budget` update: amounts added to the turn's budgets."""

    model_config = ConfigDict(extra="forbid")
    # Strict: `true` or "5" is a mistake to refuse, not an amount to guess.
    cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False, strict=True)
    time_ms: int | None = Field(default=None, gt=0, strict=True)
    iterations: int | None = Field(default=None, gt=0, strict=True)
    tool_interactions: int | None = Field(default=None, gt=0, strict=True)
    approver: str = ""
    reason: str = ""
    # Required when the agent's approvers have public keys.
    signature: Signature | None = None

    @model_validator(mode="after")
    def _extends_something(self) -> ExtendBudgetInput:
        if not self.amounts():
            fields = ", ".join(AMOUNT_FIELDS.values())
            raise ValueError(f"an extension needs at least one positive amount ({fields})")
        return self

    def amounts(self) -> dict[BudgetKind, float | int]:
        """The budgets it extends, by kind."""
        values: dict[BudgetKind, float | int | None] = {
            kind: getattr(self, name) for kind, name in AMOUNT_FIELDS.items()
        }
        return {kind: value for kind, value in values.items() if value is not None}

    def signed_fields(self, workflow_id: str, agent_id: str, request: int) -> dict[str, JsonValue]:
        """What the approver's signature covers, for budget request number `request` of the
        turn `workflow_id` of agent `agent_id`."""
        return {
            "workflow_id": workflow_id,
            "agent_id": agent_id,
            "request": request,
            "cost_usd": self.cost_usd,
            "time_ms": self.time_ms,
            "iterations": self.iterations,
            "tool_interactions": self.tool_interactions,
            "approver": self.approver,
            "reason": self.reason,
        }

    def signed_with(
        self,
        private_key: Ed25519PrivateKey,
        workflow_id: str,
        agent_id: str,
        request: int,
        expires: datetime,
        version: int = SIGNING_VERSION,
    ) -> ExtendBudgetInput:
        """This extension of budget request `request` of the turn, signed in format `version`
        (the turn's `signing_version`) until `expires`."""
        fields = self.signed_fields(workflow_id, agent_id, request)
        signature = sign(private_key, BUDGET_EXTENSION, fields, expires, version)
        return self.model_copy(update={"signature": signature})


class BudgetRequest(ContractModel):
    """What a turn in state `awaiting_budget` waits for (the status query's `budget_request`)."""

    number: int  # 1 for the turn's first request; a signed extension names it
    budget: BudgetKind
    message: str  # why the turn stopped, with figures
    since: datetime


class BudgetExtension(ContractModel):
    """One applied extension, as the report and the status query list it."""

    request: int
    budget: BudgetKind  # the budget that was exhausted
    cost_usd: float | None = None
    time_ms: int | None = None
    iterations: int | None = None
    tool_interactions: int | None = None
    approver: str = ""
    reason: str = ""
    signed: bool = False
    at: datetime


class BudgetLimits(ContractModel):
    """A turn's budgets with every extension applied; None: unlimited."""

    cost_budget_usd: float | None = None
    time_budget_ms: int | None = None
    max_iterations: int
    max_tool_interactions: int | None = None


class ExtendBudgetResult(ContractModel):
    """What the `extend_budget` update applied, and the budgets now."""

    extension: BudgetExtension
    limits: BudgetLimits
