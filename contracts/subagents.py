"""What a turn keeps of each sub-agent call it made (`AgentReport.subagents`, and the `status`
query's `subagents` while it runs)."""

from __future__ import annotations

from typing import Literal

from turnkeeper.contracts.contract_model import ContractModel

# A report's `outcome`, which a sub-agent record repeats.
SubagentOutcome = Literal["completed", "max_tokens", "failed", "cancelled"]


class SubagentRecord(ContractModel):
    """One sub-agent call of a turn (`AgentReport.subagents`), with what it spent."""

    name: str
    """The sub-agent's `name`."""
    workflow_id: str
    """The child turn's workflow id, `<parent workflow id>/<name>-<k>`."""
    outcome: SubagentOutcome
    """The child report's `outcome` (`failed` or `cancelled` when the child did not finish)."""
    cost_usd: float = 0.0
    """What the child spent, its own sub-agents included."""
    llm_calls: int = 0
    """The child's model calls, its own sub-agents' included."""
    tool_calls: int = 0
    """The child's tool calls, its own sub-agents' included."""
