"""Small inputs for the model-call steps: a call, the worker's tools and a store, each real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from turnkeeper.activities.store.conversation_store import ConversationStore
from turnkeeper.activities.tools.registry import ToolRegistry, worker_tool
from turnkeeper.contracts.activity_io import ConversationDelta, MessageDraft, ModelCallInput
from turnkeeper.contracts.messages import TextBlock

from turnkeeper.payloads.content_store import LocalFolderStore

DEMO = "demo:workspace-summarizer"


def user(text: str) -> MessageDraft:
    return MessageDraft(role="user", content=[TextBlock(text=text)])


def call(**fields: Any) -> ModelCallInput:
    values: dict[str, Any] = {
        "turn_id": "turn-1",
        "iteration": 1,
        "model": DEMO,
        "max_tokens": 1024,
        "conversation": ConversationDelta(append=[user("Hello")]),
        **fields,
    }
    return ModelCallInput(**values)


def conversations(folder: Path) -> ConversationStore:
    return ConversationStore(LocalFolderStore(folder / "store"))


@worker_tool(requires_approval=True, idempotent=False, timeout_s=5.0, priority=2)
def refund(order_id: str, amount_usd: float) -> str:
    """Refund part or all of an order."""
    return f"refunded {amount_usd} on {order_id}"


@worker_tool(local=True, timeout_s=10.0)
def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return order_id


def registry() -> ToolRegistry:
    return ToolRegistry([refund, lookup_order])
