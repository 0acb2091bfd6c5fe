"""The decision that the signing tests sign: alice's approval of one write_file call."""

from __future__ import annotations

from pydantic import JsonValue

UNSIGNED_DECISION: dict[str, JsonValue] = {
    "workflow_id": "turn-1",
    "agent_id": "research-assistant",
    "call_id": "toolu_01",
    "tool": "write_file",
    "approved": True,
    "input": None,
    "reason": "looks fine",
    "remember": False,
    "approver": "alice",
}
