"""A support team's tools over a tiny in-memory order book, and the agent that offers them.

`lookup_order` only reads, so Temporal may retry it freely. `refund` moves money: every call
waits for a human's approval, and it is keyed by the call's idempotency key so that a call
Temporal retries (a lost worker, a network error) refunds once.

Imported by `worker.py` (which runs the tools) and `client.py` (which names them in `AGENT`).
"""

from __future__ import annotations

import os
from typing import Annotated

from pydantic import Field

import turnkeeper

# What a model reads about the arguments: the offline `demo:tool-caller` model sends these
# examples, so the quick start without an API key looks up and refunds a real order.
OrderId = Annotated[str, Field(description="the order's number", examples=["1042"])]
AmountUsd = Annotated[float, Field(description="how much to refund, in USD", examples=[25.0])]

# order id -> the order; a real team would call its order service here.
ORDERS: dict[str, dict[str, str | float]] = {
    "1042": {
        "customer": "Ada Lovelace",
        "item": "Teapot",
        "total_usd": 25.0,
        "status": "delivered",
    },
    "1043": {
        "customer": "Alan Turing",
        "item": "Kettle",
        "total_usd": 40.0,
        "status": "shipped",
    },
}

# idempotency key -> the confirmation that call got, so a retried call refunds once.
REFUNDS: dict[str, str] = {}

AGENT = {
    "id": "support-agent",
    "model": os.environ.get("SUPPORT_MODEL", "anthropic:claude-sonnet-4-6"),
    "system_prompt": (
        "You are a support agent for a small shop. Look the order up before you act, refund "
        "at most its total, and tell the customer what you did in one or two sentences."
    ),
    "tools": ["lookup_order", "refund"],
}


@turnkeeper.tool
async def lookup_order(order_id: OrderId) -> dict[str, str | float]:
    """Look an order up by its id: customer, item, total in USD and delivery status."""
    order = ORDERS.get(order_id)
    if order is None:
        raise turnkeeper.ToolError(f"there is no order {order_id!r}")
    return {"order_id": order_id, **order}


@turnkeeper.tool(requires_approval=True, idempotent=False)
async def refund(order_id: OrderId, amount_usd: AmountUsd, context: turnkeeper.ToolContext) -> str:
    """Refund part or all of an order to the customer's original payment method."""
    if context.idempotency_key in REFUNDS:
        return REFUNDS[context.idempotency_key]
    order = ORDERS.get(order_id)
    if order is None:
        raise turnkeeper.ToolError(f"there is no order {order_id!r}")
    if not 0 < amount_usd <= float(order["total_usd"]):
        raise turnkeeper.ToolError(
            f"a refund of order {order_id} must be above 0 and at most its total, "
            f"{order['total_usd']:.2f} USD"
        )
    confirmation = (
        f"Refunded {amount_usd:.2f} USD on order {order_id} (refund R-{len(REFUNDS) + 1})"
    )
    REFUNDS[context.idempotency_key] = confirmation
    return confirmation
