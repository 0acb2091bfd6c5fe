"""The support team's worker: runs turns with `lookup_order` and `refund` (no workspace tools).

    python examples/support/worker.py          # against TEMPORAL_ADDRESS (default localhost:7233)
    python examples/support/worker.py --dev    # first start a local dev server with its Web UI

Needs ANTHROPIC_API_KEY for an Anthropic model (nothing for the offline `demo:tool-caller`);
polls AGENT_TASK_QUEUE (default `agent-turns`). Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import asyncio

from tools import lookup_order, refund

import turnkeeper

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev", action="store_true", help="start a local Temporal dev server")
    args = parser.parse_args()
    asyncio.run(
        turnkeeper.run_worker(tools=[lookup_order, refund], builtin_tools=False, dev=args.dev)
    )
