"""Scorers of a turn's own facts, as pydantic-evals evaluators: they read what the turn did from
the context's `turnkeeper` attribute (`turn_facts`), so they score the same under
`turnkeeper eval` and under pydantic-evals' own `Dataset.evaluate` (whose task sets the
attribute with `set_eval_attribute`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext
from turnkeeper.contracts.messages import Message, ToolUseBlock
from turnkeeper.contracts.turn import AgentReport

FACTS: Final = "turnkeeper"


def turn_facts(report: AgentReport, messages: list[Message], structured: bool) -> dict[str, Any]:
    """What the turn-fact scorers read: outcome, tool calls with their arguments, approvals,
    cost, iterations and whether a structured output was asked and given."""
    calls = [
        {"tool": block.name, "input": block.input}
        for message in messages
        if message.role == "assistant"
        for block in message.content
        if isinstance(block, ToolUseBlock)
    ]
    return {
        "outcome": report.outcome,
        "tool_calls": calls,
        "approvals": approvals_of(report),
        "cost_usd": report.cost_usd,
        "iterations": report.iterations,
        "structured": structured and report.structured_output is not None,
    }


def approvals_of(report: AgentReport) -> list[dict[str, Any]]:
    """Each approval decided in the turn (a standing approval included)."""
    return [
        {"tool": d.tool, "approved": d.approved, "approver": d.approver} for d in report.decisions
    ]


def _facts(ctx: EvaluatorContext) -> dict[str, Any]:
    facts = ctx.attributes.get(FACTS)
    if not isinstance(facts, dict):
        raise ValueError(f"no turn facts: the task must set the {FACTS!r} attribute")
    return facts


def _matches(call: dict[str, Any], tool: str, arguments: dict[str, Any] | None) -> bool:
    """The call is of `tool` and has each of `arguments` with that value (others may differ)."""
    if call["tool"] != tool:
        return False
    given = call["input"]
    return all(key in given and given[key] == value for key, value in (arguments or {}).items())


@dataclass(repr=False)
class TurnOutcome(Evaluator):
    """The turn ended with `outcome` (default `completed`)."""

    outcome: str = "completed"

    def evaluate(self, ctx: EvaluatorContext) -> bool:
        return _facts(ctx)["outcome"] == self.outcome


@dataclass(repr=False)
class ToolCalled(Evaluator):
    """The turn called `tool`, with at least these `arguments` when given."""

    tool: str
    arguments: dict[str, Any] | None = None

    def evaluate(self, ctx: EvaluatorContext) -> bool:
        return any(_matches(c, self.tool, self.arguments) for c in _facts(ctx)["tool_calls"])


@dataclass(repr=False)
class ToolNotCalled(Evaluator):
    """The turn never called `tool` (with these `arguments`, when given)."""

    tool: str
    arguments: dict[str, Any] | None = None

    def evaluate(self, ctx: EvaluatorContext) -> bool:
        return not any(_matches(c, self.tool, self.arguments) for c in _facts(ctx)["tool_calls"])


@dataclass(repr=False)
class ApprovalRequested(Evaluator):
    """A call (of `tool`, when given) waited for approval in the turn."""

    tool: str | None = None

    def evaluate(self, ctx: EvaluatorContext) -> bool:
        asked = [a for a in _facts(ctx)["approvals"] if self.tool in (None, a["tool"])]
        return bool(asked)


@dataclass(repr=False)
class MaxCost(Evaluator):
    """The turn cost at most `usd`."""

    usd: float

    def evaluate(self, ctx: EvaluatorContext) -> EvaluationReason:
        spent = _facts(ctx)["cost_usd"]
        return EvaluationReason(spent <= self.usd, reason=f"cost ${spent:.6f}")


@dataclass(repr=False)
class MaxIterations(Evaluator):
    """The turn took at most `iterations` iterations."""

    iterations: int

    def evaluate(self, ctx: EvaluatorContext) -> EvaluationReason:
        took = _facts(ctx)["iterations"]
        return EvaluationReason(took <= self.iterations, reason=f"{took} iterations")


@dataclass(repr=False)
class StructuredOutputValid(Evaluator):
    """The agent has an `output_schema` and the turn's answer was accepted against it."""

    def evaluate(self, ctx: EvaluatorContext) -> bool:
        return bool(_facts(ctx)["structured"])


TURN_FACT_EVALUATORS: Final[tuple[type[Evaluator], ...]] = (
    TurnOutcome,
    ToolCalled,
    ToolNotCalled,
    ApprovalRequested,
    MaxCost,
    MaxIterations,
    StructuredOutputValid,
)
