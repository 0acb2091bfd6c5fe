"""An MCP server that asks for input during a call (elicitation), as the workflow sees it.

A server asks in one of two ways, by protocol era. In 2026-07-28 it answers `tools/call` with
an `InputRequiredResult` (its questions and an opaque `requestState`): the `mcp_call_tool`
activity returns that to the workflow (`McpCallOutcome.input_required`), which lists the
question, waits for a person and calls again with the answers. Before (2025-06-18, 2025-11-25)
the server sends an `elicitation/create` request in the middle of the call and waits on the same
session: the activity asks its own workflow through the `mcp_elicitation` update, which lists
the question and returns the person's answer.

Either way the question is a pending call of kind `elicitation`, answered through `decide`:
`approved: true` accepts with `input` as the answer (checked against the server's schema),
`approved: false` declines, and `approved: false` with `reason: "cancel"` cancels (the person
dismissed the question without choosing). Pure: no I/O, imported by workflows and activities.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, JsonValue
from turnkeeper.contracts.activity_io import ToolCallResult
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.tool_validation import validation_problems

# The update the `mcp_call_tool` activity sends its own workflow when a handshake-era server
# asks for input mid-call. Never rename it: in-flight activities send it by name.
UPDATE_MCP_ELICITATION: Final = "mcp_elicitation"
# `decide` with `approved: false` and this reason cancels the question instead of declining it.
ELICITATION_CANCEL: Final = "cancel"

ElicitationAction = Literal["accept", "decline", "cancel"]


class ElicitationAsked(ContractModel):
    """One question of an MCP server: the message a person reads and the schema of the answer."""

    message: str
    """What the server asks, as it wrote it."""
    requested_schema: dict[str, JsonValue] = Field(default_factory=lambda: {"type": "object"})
    """The JSON Schema the answer must fit (MCP allows a flat object of primitive fields)."""
    key: str = ""
    """In 2026-07-28, the key of this question in the server's `inputRequests`; empty before."""


class ElicitationAnswer(ContractModel):
    """A person's answer to a question, as the server receives it (MCP's `ElicitResult`)."""

    action: ElicitationAction
    """`accept` (with `content`), `decline` or `cancel`."""
    content: dict[str, JsonValue] | None = None
    """With `accept`: the answer, which fits the question's schema."""


class McpElicitationInput(ContractModel):
    """The payload of the `mcp_elicitation` update: the question a handshake-era server asked
    during the call `call_id`, sent by that call's activity (attempt `attempt`)."""

    call_id: str = Field(min_length=1)
    """The MCP tool call during which the server asked."""
    attempt: int = Field(default=1, ge=1)
    """The activity's attempt: a later attempt's question replaces an earlier one's."""
    asked: ElicitationAsked
    """The question."""


class McpInputRequired(ContractModel):
    """A 2026-07-28 server's `InputRequiredResult`: the questions, and the state it wants back."""

    asked: list[ElicitationAsked] = Field(default_factory=list)
    """The elicitations among its `inputRequests`, each with its key."""
    request_state: str | None = None
    """The server's opaque `requestState`, echoed byte for byte on the next call."""


class McpCallOutcome(ToolCallResult):
    """The `mcp_call_tool` activity's result: a `ToolCallResult`, or the server's questions."""

    input_required: McpInputRequired | None = None
    """The server needs answers before it can finish the call (then no block was stored)."""


def answer_of(
    approved: bool, reason: str, content: dict[str, JsonValue] | None
) -> ElicitationAnswer:
    """The answer a `decide` payload gives: accept with `content`, decline, or cancel."""
    if approved:
        return ElicitationAnswer(action="accept", content=content or {})
    return ElicitationAnswer(action="cancel" if reason == ELICITATION_CANCEL else "decline")


def answer_problem(
    asked: ElicitationAsked, approved: bool, remember: bool, content: dict[str, JsonValue] | None
) -> str | None:
    """Why a `decide` payload cannot answer `asked`, or None: an acceptance's `input` must fit
    the server's schema (a missing `input` is an empty answer), and `remember` is for approvals.
    """
    if remember:
        return "remember applies to approvals, not to a server's question"
    if not approved:
        return None
    problems = validation_problems(asked.requested_schema, content or {})
    if problems:
        return "the answer does not fit the server's requested schema: " + "; ".join(problems)
    return None
