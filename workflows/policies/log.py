"""The part of a turn that keeps its policy decisions (carried across continue-as-new)."""

from __future__ import annotations

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.policies import PolicyDecision
    from turnkeeper.contracts.policy_io import PolicyCheckResult


class PolicyLog(BaseModel):
    """Every policy decision of the turn, in the order the calls were checked."""

    policy_decisions: list[PolicyDecision] = Field(default_factory=list)

    # The last answer's decisions, by call id, until its calls are settled: never carried
    # across continue-as-new, which happens only between iterations.
    rulings: dict[str, PolicyCheckResult] = Field(default_factory=dict, exclude=True)

    def ruled(self, rulings: list[PolicyCheckResult]) -> None:
        """A model call answered, with the worker's decision on each of its tool calls."""
        self.rulings = {ruling.call_id: ruling for ruling in rulings}

    def ruling(self, call_id: str) -> PolicyCheckResult | None:
        return self.rulings.get(call_id)

    def record(self, decision: PolicyDecision) -> None:
        self.policy_decisions.append(decision)
