"""The live event stream of a turn (Temporal workflow streams, topic `TURN_EVENTS_TOPIC`).

The workflow publishes these as the turn progresses; `turnkeeper watch` and any client can
subscribe from offset 0, also after the turn has finished, and replay the turn's story.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from pydantic import JsonValue
from turnkeeper.contracts.contract_model import ContractModel

TURN_EVENTS_TOPIC: Final = "turn-events"

EventKind = Literal[
    "turn_started",
    "iteration_started",
    "model_call_finished",
    "model_skipped",  # a model of the fallback chain was passed over; `reason` says why
    "text_delta",
    # the text deltas of a streamed attempt that failed are void: a retry's text follows
    "text_discarded",
    "tool_call_started",
    "tool_call_finished",
    # output of a running run_python or run_shell call, as it is produced (with `agent.stream`)
    "tool_output",
    # an MCP server answered a tool call with a task, or the task's status changed
    "mcp_task_status",
    "approval_requested",
    "approval_decided",
    "budget_status",
    "budget_exhausted",
    "budget_extended",
    "compacted",
    "steered",  # a `steer` message joined the conversation before this iteration's model call
    "interrupted",  # an `interrupt` stopped the turn; `turn_finished` follows
    "subagent_started",  # a sub-agent call started its child turn (`workflow_id`)
    "subagent_finished",  # that child turn ended (`outcome`, and `error_type` when it failed)
    # a guardrail of `agent.guardrails` judged the input, a tool result or the answer
    "guardrail_decision",
    # a tool call's policy decision (`effect`, `policies`, `enforced`), before the call runs
    "policy_decision",
    "turn_finished",
    "turn_failed",
]


class TurnEvent(ContractModel):
    """One event of a turn's live event stream (`turnkeeper.TurnEvent`). Which of the optional
    fields an event sets depends on its `kind`; the others stay None."""

    kind: EventKind
    """What happened."""
    at: datetime
    """When it happened (workflow time)."""
    iteration: int = 0
    """The iteration it belongs to."""
    max_iterations: int | None = None
    """The iteration limit, extensions included."""
    # model calls
    model: str | None = None
    """The `provider:model` called or passed over."""
    input_tokens: int | None = None
    """Not set by this version (the report's `usage` and the `llm_call` log line carry
    tokens)."""
    output_tokens: int | None = None
    """Not set by this version (the report's `usage` and the `llm_call` log line carry
    tokens)."""
    call_cost_usd: float | None = None
    """The cost of one model call."""
    stop_reason: str | None = None
    """Why the model stopped (`end_turn`, `tool_use`, `max_tokens`)."""
    text: str | None = None
    """An answer's text, or a text delta of a streamed model call."""
    attempt: int | None = None
    """Of `text_discarded`: the attempt (1, 2, …) of the model call whose streamed text is
    void."""
    discarded_chars: int | None = None
    """Of `text_discarded`: how many characters of streamed text to take back."""
    # tool calls and approvals
    call_id: str | None = None
    """The tool call."""
    tool: str | None = None
    """The tool call's tool."""
    input: dict[str, JsonValue] | None = None
    """The tool call's arguments."""
    is_error: bool | None = None
    """The tool call's result is an error."""
    stream: Literal["stdout", "stderr"] | None = None
    """Of `tool_output`: which output of the call `text` comes from."""
    mcp_task_id: str | None = None
    """Of `mcp_task_status`: the MCP server's id of the task that answers the tool call."""
    mcp_task_status: str | None = None
    """Of `mcp_task_status`: the task's status (`working`, `input_required`, `completed`,
    `failed`, `cancelled`); `text` holds what the server said of it."""
    approved: bool | None = None
    """The decision's verdict."""
    approver: str | None = None
    """Who decided, or extended a budget."""
    author: str | None = None
    """Who steered or interrupted the turn (`text` holds a steer's message, `reason` an
    interrupt's reason)."""
    reason: str | None = None
    """Why: of a decision, of a budget extension, or why a model was passed over."""
    # policy decisions
    effect: str | None = None
    """Of `policy_decision`: `permit`, `ask` or `forbid`."""
    policies: list[str] | None = None
    """Of `policy_decision`: the deciding policies' `@id`s."""
    enforced: bool | None = None
    """Of `policy_decision` and `guardrail_decision`: whether the turn applied it (False in
    `log_only`)."""
    # budgets and the end of the turn
    budget: str | None = None
    """Which budget was spent or extended."""
    cost_usd: float | None = None
    """The turn's cost so far."""
    cost_budget_usd: float | None = None
    """The turn's cost budget."""
    elapsed_ms: int | None = None
    """Time counted against the time budget so far."""
    time_budget_ms: int | None = None
    """The turn's time budget."""
    llm_calls: int | None = None
    """Model calls so far."""
    tool_calls: int | None = None
    """Tool calls so far."""
    outcome: str | None = None
    """The report's `outcome`."""
    # compaction: what was left out of the model's requests (counts, never content)
    strategy: str | None = None
    """The compaction strategy (`drop_oldest`, `summarize`)."""
    trigger: str | None = None
    """What made the turn compact: `max_input_tokens` or `context_too_long`."""
    removed_messages: int | None = None
    """Messages left out of the request."""
    kept_messages: int | None = None
    """Messages the request sent."""
    tokens_before: int | None = None
    """The counted input before the compaction."""
    tokens_after: int | None = None
    """The counted input after the compaction."""
    max_input_tokens: int | None = None
    """The compaction's limit."""
    # guardrails: `call_id` (of a tool result) and `reason` are set above
    guardrail: str | None = None
    """Of `guardrail_decision`: the guardrail's name."""
    stage: str | None = None
    """Of `guardrail_decision`: `input`, `tool_result` or `answer`."""
    verdict: str | None = None
    """Of `guardrail_decision`: `pass`, `redact` or `block`."""
    workflow_id: str | None = None
    """Of a sub-agent event: the child turn's workflow id (`tool` names the sub-agent)."""
    error_type: str | None = None
    """A failure's type (one of the contract's error types)."""
    message: str | None = None
    """A failure's message, or why a budget request stopped the turn."""
