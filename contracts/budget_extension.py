"""Budgets a human can extend: with `constraints.on_budget_exhausted: "pause"`, a turn that would
exceed a budget waits in state `awaiting_budget` for the `extend_budget` update instead of
failing.

A signed extension covers, under its own signing kind (`budget-extension`, never `decision`),
the turn's workflow id, first run id (signing format 3) and agent id, the number of the budget
request it answers and every amount, so that it cannot pass for a tool decision, be replayed
onto another turn (a later one under the same workflow id included) or onto a later request of
the same turn, or have its amounts changed.
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
    bind_run,
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
    """The payload of the `extend_budget` update: amounts added to the turn's budgets, at least
    one. Amounts are strict: `true` or "5" is a mistake to refuse, not an amount to guess."""

    model_config = ConfigDict(extra="forbid")
    cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False, strict=True)
    """USD added to the cost budget."""
    time_ms: int | None = Field(default=None, gt=0, strict=True)
    """Milliseconds added to the time budget."""
    iterations: int | None = Field(default=None, gt=0, strict=True)
    """Iterations added to `max_iterations`."""
    tool_interactions: int | None = Field(default=None, gt=0, strict=True)
    """Tool interactions added to `max_tool_interactions`."""
    approver: str = ""
    """Who extends; must be one of `agent.approvers` when that is set."""
    reason: str = ""
    """Why."""
    signature: Signature | None = None
    """Of kind `budget-extension`; required when the agent's approvers have public keys."""

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

    def signed_fields(
        self, workflow_id: str, agent_id: str, request: int, first_run_id: str | None = None
    ) -> dict[str, JsonValue]:
        """What the approver's signature covers, for budget request number `request` of the
        turn `workflow_id` of agent `agent_id` whose first run is `first_run_id` (given where
        the turn's signing format binds it)."""
        fields: dict[str, JsonValue] = {
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
        return bind_run(fields, first_run_id)

    def signed_with(
        self,
        private_key: Ed25519PrivateKey,
        workflow_id: str,
        agent_id: str,
        request: int,
        expires: datetime,
        version: int = SIGNING_VERSION,
        first_run_id: str | None = None,
    ) -> ExtendBudgetInput:
        """This extension of budget request `request` of the turn (first run `first_run_id`),
        signed in format `version` (the turn's `signing_version`) until `expires`."""
        fields = self.signed_fields(workflow_id, agent_id, request, first_run_id)
        signature = sign(private_key, BUDGET_EXTENSION, fields, expires, version)
        return self.model_copy(update={"signature": signature})


class BudgetRequest(ContractModel):
    """What a turn in state `awaiting_budget` waits for (the status query's `budget_request`)."""

    number: int
    """1 for the turn's first request; a signed extension names it."""
    budget: BudgetKind
    """The budget that was spent."""
    message: str
    """Why the turn stopped, with figures."""
    since: datetime
    """Since when the turn waits."""


class BudgetExtension(ContractModel):
    """One applied extension, as the report and the status query list it."""

    request: int
    """The `number` of the budget request it answered."""
    budget: BudgetKind
    """The budget that was exhausted."""
    cost_usd: float | None = None
    """USD added to the cost budget."""
    time_ms: int | None = None
    """Milliseconds added to the time budget."""
    iterations: int | None = None
    """Iterations added to `max_iterations`."""
    tool_interactions: int | None = None
    """Tool interactions added to `max_tool_interactions`."""
    approver: str = ""
    """Who extended."""
    reason: str = ""
    """Why."""
    signed: bool = False
    """Its signature was verified."""
    at: datetime
    """When it was applied."""


class BudgetLimits(ContractModel):
    """A turn's budgets with every extension applied; None: unlimited."""

    cost_budget_usd: float | None = None
    """USD the turn may spend."""
    time_budget_ms: int | None = None
    """Milliseconds the turn may work, waits for humans not counted."""
    max_iterations: int
    """Model calls the turn may make."""
    max_tool_interactions: int | None = None
    """Iterations in which the model may call tools."""


class ExtendBudgetResult(ContractModel):
    """What the `extend_budget` update applied, and the budgets now."""

    extension: BudgetExtension
    """The extension as applied."""
    limits: BudgetLimits
    """The turn's budgets now, every extension applied."""
