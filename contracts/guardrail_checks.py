"""What crosses the `check_guardrails` activity (`contracts/guardrails.py` says what guardrails
are): the texts to check, the guardrails that check them, and what they made of each."""

from __future__ import annotations

from pydantic import Field
from turnkeeper.contracts.activity_io import CompactModel
from turnkeeper.contracts.claim_check import ClaimChecked
from turnkeeper.contracts.guardrails import GuardrailDecision, GuardrailRef, GuardrailStage


class GuardedText(CompactModel, ClaimChecked):
    """One text a guardrail check reads, and after the check, the text the turn goes on with."""

    call_id: str = ""
    """Of a tool result: the call's id."""
    tool: str = ""
    """Of a tool result: the tool's name."""
    text: str = ""
    """The text as it came: the task input, the tool result's text, or the answer."""


class CheckGuardrailsInput(CompactModel, ClaimChecked):
    """The `check_guardrails` activity's input."""

    guardrails: list[GuardrailRef] = Field(default_factory=list)
    """`agent.guardrails` in long form: run in this order."""
    stage: GuardrailStage
    """Where the texts come from: `input`, `tool_result` or `answer`."""
    texts: list[GuardedText] = Field(default_factory=list)
    """What to check (one for the input and the answer; each tool result of one response)."""


class GuardedOutcome(CompactModel, ClaimChecked):
    """What the guardrails made of one text."""

    decisions: list[GuardrailDecision] = Field(default_factory=list)
    """Every guardrail's verdict, in the order they ran (an enforced block stops the chain)."""
    blocked_by: str | None = None
    """The enforced guardrail that blocked the text; None: not blocked."""
    reason: str = ""
    """Why it was blocked, in the guardrail's words."""
    text: str | None = None
    """The text after enforced redactions; None: unchanged."""


class CheckGuardrailsResult(CompactModel, ClaimChecked):
    """The `check_guardrails` activity's result: one outcome per text, in order."""

    outcomes: list[GuardedOutcome] = Field(default_factory=list)
    """What the guardrails made of each text of the input, in its order."""
