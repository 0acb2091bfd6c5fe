"""What a sub-agent inherits from the turn that calls it: budgets flow down (the child gets what
its parent has left at the call, or its own limits where smaller) and the autonomy boundary
holds (the parent's approval rules, approvers and `allowed_tools`). Pure arithmetic on
contract models, apart from the workflow so that it can be tested (and mutation-tested)
alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from turnkeeper.contracts.turn import AgentSpec, Constraints, SubagentSpec

N = TypeVar("N", int, float)


@dataclass(frozen=True)
class Remaining:
    """What is left of a parent's budgets at a call; None: unlimited."""

    time_ms: float | None
    cost_usd: float | None
    tool_interactions: int | None


def shared(left: Remaining, calls: int) -> Remaining:
    """Each of `calls` sub-agent calls of one answer, running side by side, gets an equal share
    of the cost and of the tool interactions left, so that together they cannot spend more than
    the parent has; time passes for all of them at once, so each gets all of it."""
    calls = max(calls, 1)
    return Remaining(
        time_ms=left.time_ms,
        cost_usd=None if left.cost_usd is None else left.cost_usd / calls,
        tool_interactions=None
        if left.tool_interactions is None
        else left.tool_interactions // calls,
    )


def spent_problem(left: Remaining) -> str | None:
    """Why no child can start with `left` (a budget with nothing in it), or None."""
    if left.time_ms is not None and left.time_ms < 1:
        return "the time budget is spent"
    if left.cost_usd is not None and left.cost_usd <= 0:
        return "the cost budget is spent"
    return None


def child_constraints(parent: Constraints, left: Remaining, spec: SubagentSpec) -> Constraints:
    """The constraints of the child turn that `spec` runs as."""
    own = spec.constraints or Constraints()
    time_left = None if left.time_ms is None else int(left.time_ms)
    return own.model_copy(
        update={
            "time_budget_ms": _smaller(own.time_budget_ms, time_left),
            "cost_budget_usd": _smaller(own.cost_budget_usd, left.cost_usd),
            "max_tool_interactions": _smaller(own.max_tool_interactions, left.tool_interactions),
            "require_approval": _union(parent.require_approval, own.require_approval),
            "allowed_tools": _allowed(parent.allowed_tools, own.allowed_tools, spec.agent),
            "approval_timeout_s": _approval_timeout(parent, own),
            # A child that paused for an extension would wait where no one looks: it fails, and
            # its parent (which may pause) reads that as a tool error.
            "on_budget_exhausted": "fail",
        }
    )


def child_agent(parent: AgentSpec, spec: SubagentSpec) -> AgentSpec:
    """The child's agent: its own, deciding with the parent's approvers unless it names its
    own."""
    if spec.agent.approvers is not None or parent.approvers is None:
        return spec.agent
    return spec.agent.model_copy(update={"approvers": list(parent.approvers)})


def _smaller(own: N | None, left: N | None) -> N | None:
    if own is None:
        return left
    if left is None:
        return own
    return min(own, left)


def _union(first: list[str], second: list[str]) -> list[str]:
    return [*first, *(name for name in second if name not in first)]


def _allowed(
    boundary: list[str] | None, own: list[str] | None, agent: AgentSpec
) -> list[str] | None:
    """The child's `allowed_tools`: its own narrowing, inside the parent's boundary. The child's
    tools lie inside the boundary (checked when the root starts), and its sub-agents are its
    own to offer."""
    if boundary is None:
        return own
    names = own if own is not None else [*agent.tools, *(s.name for s in agent.subagents)]
    inside = set(boundary) | {s.name for s in agent.subagents}
    return [name for name in names if name in inside]


def _approval_timeout(parent: Constraints, own: Constraints) -> float:
    if "approval_timeout_s" in own.model_fields_set:
        return min(own.approval_timeout_s, parent.approval_timeout_s)
    return parent.approval_timeout_s
