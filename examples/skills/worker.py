"""A support worker with a skill: `lookup_order` for every agent, and the `refund-policy` skill
(`skills/refund-policy/SKILL.md`), which brings the `refund` tool to the agents that name it.

    python examples/skills/worker.py --dev     # a local dev server with its Web UI, and the worker
    turnkeeper run --agent examples/skills/agent.json "Refund order 1042, it arrived broken"

The skills are the folders of `skills/` beside this script, unless TURNKEEPER_SKILLS_DIR names
another folder. Needs ANTHROPIC_API_KEY; polls AGENT_TASK_QUEUE (default `agent-turns`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

import turnkeeper

# order id -> (customer's country, total in USD); a real team would call its order service.
ORDERS: dict[str, tuple[str, float]] = {"1042": ("United Kingdom", 25.0), "1043": ("Peru", 40.0)}


@turnkeeper.tool
async def lookup_order(order_id: str) -> dict[str, str | float]:
    """Look an order up by its id: the customer's country and the total in USD."""
    if order_id not in ORDERS:
        raise turnkeeper.ToolError(f"there is no order {order_id!r}")
    country, total = ORDERS[order_id]
    return {"order_id": order_id, "country": country, "total_usd": total}


@turnkeeper.tool(requires_approval=True, idempotent=False)
async def refund(order_id: str, amount_usd: float) -> str:
    """Refund part or all of an order to the customer's original payment method."""
    if order_id not in ORDERS:
        raise turnkeeper.ToolError(f"there is no order {order_id!r}")
    total = ORDERS[order_id][1]
    if not 0 < amount_usd <= total:
        raise turnkeeper.ToolError(
            f"a refund of order {order_id} must be above 0 and at most {total:.2f} USD"
        )
    return f"Refunded {amount_usd:.2f} USD on order {order_id}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev", action="store_true", help="start a local Temporal dev server")
    args = parser.parse_args()
    os.environ.setdefault("TURNKEEPER_SKILLS_DIR", str(Path(__file__).parent / "skills"))
    asyncio.run(
        turnkeeper.run_worker(tools=[lookup_order, refund], builtin_tools=False, dev=args.dev)
    )
