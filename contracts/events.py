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
    "tool_call_started",
    "tool_call_finished",
    "approval_requested",
    "approval_decided",
    "budget_status",
    "budget_exhausted",
    "budget_extended",
    "compacted",
    "turn_finished",
    "turn_failed",
]


class TurnEvent(ContractModel):
    kind: EventKind
    at: datetime
    iteration: int = 0
    max_iterations: int | None = None
    # model calls
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    call_cost_usd: float | None = None
    stop_reason: str | None = None
    text: str | None = None  # text deltas of streamed model calls
    # tool calls and approvals
    call_id: str | None = None
    tool: str | None = None
    input: dict[str, JsonValue] | None = None
    is_error: bool | None = None
    approved: bool | None = None
    approver: str | None = None
    reason: str | None = None
    # budgets and the end of the turn
    budget: str | None = None  # which budget was spent or extended
    cost_usd: float | None = None
    cost_budget_usd: float | None = None
    elapsed_ms: int | None = None
    time_budget_ms: int | None = None
    llm_calls: int | None = None
    tool_calls: int | None = None
    outcome: str | None = None
    # compaction: what was left out of the model's requests (counts, never content)
    strategy: str | None = None
    trigger: str | None = None
    removed_messages: int | None = None
    kept_messages: int | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    max_input_tokens: int | None = None
    error_type: str | None = None
    message: str | None = None
