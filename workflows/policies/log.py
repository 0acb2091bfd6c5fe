"""The part of a turn that keeps its policy decisions (carried across continue-as-new)."""

from __future__ import annotations

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.policies import PolicyDecision


class PolicyLog(BaseModel):
    """Every policy decision of the turn, in the order the calls were checked."""

    # Left out of the carried payload while empty, so a turn without policies carries what it
    # carried before policies existed.
    policy_decisions: list[PolicyDecision] = Field(
        default_factory=list, exclude_if=lambda decisions: not decisions
    )

    def record(self, decision: PolicyDecision) -> None:
        self.policy_decisions.append(decision)
