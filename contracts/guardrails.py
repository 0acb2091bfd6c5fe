"""Guardrails: the worker's checks of what goes into a turn and what comes out of it.

A guardrail is a function on the worker (`@turnkeeper.guardrail`, or one of the two built in:
`secrets` and `size_cap`) that reads a text and returns pass, redact (the text to use instead)
or block (a reason). An agent names the ones its turns run (`agent.guardrails`), each in
`enforce` or `log_only` mode. They check three stages: the task input (before any model call),
each tool result (before the model reads it) and the final answer. The workflow only knows their
names: the `check_guardrails` activity runs them, and the turn records each decision
(`AgentReport.guardrail_decisions`), so a replay reads the verdicts from history.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import ConfigDict, Field
from turnkeeper.contracts.contract_model import ContractModel

GuardrailMode = Literal["enforce", "log_only"]
GuardrailStage = Literal["input", "tool_result", "answer"]
Verdict = Literal["pass", "redact", "block"]

# The built-in guardrails, on every worker.
SECRETS_GUARDRAIL: Final = "secrets"
SIZE_CAP_GUARDRAIL: Final = "size_cap"
# The worker variable that sets `size_cap`'s limit, in characters.
GUARDRAIL_MAX_CHARS_ENV: Final = "TURNKEEPER_GUARDRAIL_MAX_CHARS"
DEFAULT_GUARDRAIL_MAX_CHARS: Final = 100_000


class GuardrailRef(ContractModel):
    """An entry of `agent.guardrails` in its long form (the short form is the name alone, in
    `enforce` mode)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=128)
    """The guardrail's name on the worker (`@turnkeeper.guardrail`'s, or a built-in one)."""
    mode: GuardrailMode = "enforce"
    """`enforce`: a redact or block verdict applies. `log_only`: it is only recorded."""


class GuardrailDecision(ContractModel):
    """One guardrail's verdict on one text (`AgentReport.guardrail_decisions`)."""

    guardrail: str
    """The guardrail's name."""
    stage: GuardrailStage
    """What it checked: the task `input`, a `tool_result` or the final `answer`."""
    call_id: str = ""
    """Of a `tool_result`: the tool call's id."""
    verdict: Verdict
    """`pass`, `redact` (the text was replaced) or `block`."""
    enforced: bool
    """The guardrail runs in `enforce` mode, so its verdict applied; False: `log_only`, recorded
    only."""
    reason: str = ""
    """Of a block, the guardrail's reason; of a redaction, what it left out (never the text)."""
