"""Signal payloads and query results."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

TurnState = Literal[
    "running", "awaiting_approval", "awaiting_external", "completed", "failed", "cancelled"
]
PendingKind = Literal["approval", "external"]


ALL_PENDING = "*"


class ApproveInput(BaseModel):
    """The payload of the `approve` signal and of the `decide` update."""

    model_config = ConfigDict(extra="forbid")
    call_id: str = Field(min_length=1)  # or "*": every call of the turn waiting for approval
    approved: bool
    reason: str = ""
    remember: bool = False
    approver: str = ""
    # Replacement arguments for the call (edit before approve); checked against its schema.
    input: dict[str, JsonValue] | None = None


class DecisionRecord(BaseModel):
    """One settled approval, as the report and the `decisions` query show it."""

    call_id: str
    tool: str
    approved: bool
    approver: str = ""
    reason: str = ""
    edited: bool = False
    standing: bool = False  # approved by a standing approval (remember: true earlier)
    at: datetime


class DecideResult(BaseModel):
    """What the `decide` update applied."""

    decisions: list[DecisionRecord]


class SubmitToolResultInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    call_id: str = Field(min_length=1)
    output: JsonValue = None
    is_error: bool = False


class PendingCall(BaseModel):
    call_id: str
    tool: str
    input: dict[str, JsonValue]
    kind: PendingKind
    since: datetime


class TurnStatus(BaseModel):
    state: TurnState
    iteration: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    cost_usd: float = 0.0
    elapsed_ms: int = 0
    pending: list[PendingCall] = Field(default_factory=list)
