"""The turn's part that holds its guardrail verdicts (`AgentReport.guardrail_decisions`). The
verdicts come from the `check_guardrails` activity's results, so a replay reads them from
history and never runs a guardrail again."""

from __future__ import annotations

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.guardrails import GuardrailDecision


class GuardrailLog(BaseModel):
    """Every guardrail verdict of the turn, enforced or not, in the order they were reached.
    Carried across continue-as-new, so that the report holds the whole turn's."""

    guardrail_decisions: list[GuardrailDecision] = Field(default_factory=list)

    def record(self, decisions: list[GuardrailDecision]) -> None:
        """Guardrails judged a text: their verdicts join the record."""
        self.guardrail_decisions.extend(decisions)
