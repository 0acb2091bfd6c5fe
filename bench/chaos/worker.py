"""A chaos worker process: the project's workflows and activities, the fake provider, and two
tools whose effects the matrix can count.

    python -m bench.chaos.worker ADDRESS TASK_QUEUE DATA_DIR LEDGER

`lookup` is idempotent; `record_payment` is not, and writes its call id to the ledger when it
starts, so a second run of one call shows up as a duplicate line. Both take a moment, so that a
kill lands in the middle of a tool call as often as in a model call. The provider reads
`ANTHROPIC_BASE_URL` (the fake) and answers within `CHAOS_PROVIDER_TIMEOUT_S`; the content
store is `TURNKEEPER_STORE_URL`'s, reached through `AWS_ENDPOINT_URL`.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
from pathlib import Path

from temporalio.worker import Worker
from turnkeeper.activities.providers.anthropic_provider import AnthropicProvider
from turnkeeper.activities.tools.registry import ToolContext, ToolRegistry, WorkerTool, worker_tool
from turnkeeper.contracts.rate_limits import RATE_LIMITS_ENV, parse_rate_limits

from turnkeeper.client.connection import connect
from turnkeeper.payloads.stores import STORE_URL_ENV
from turnkeeper.worker.settings import MCP_CONFIG_ENV, Settings
from turnkeeper.worker.wiring import build_activities, worker_workflows, workflow_runner

TOOL_SECONDS = (0.2, 1.2)


def chaos_settings(task_queue: str, data_dir: Path) -> Settings:
    """Settings of every chaos worker and client: the content store is the one of
    `TURNKEEPER_STORE_URL` (the S3 store on moto, as in production), shared by all of them."""
    return Settings(
        task_queue=task_queue,
        workspace=data_dir / "workspace",
        data_dir=data_dir,
        store_dir=data_dir / "store",
        store_url=os.environ.get(STORE_URL_ENV) or None,
        mcp_config=Path(os.environ[MCP_CONFIG_ENV]) if os.environ.get(MCP_CONFIG_ENV) else None,
        # The ledger rows' model is rate limited (`ledger_rows.py`); no other row's is.
        rate_limits=parse_rate_limits(os.environ.get(RATE_LIMITS_ENV)),
    )


def chaos_tools(ledger: Path) -> list[WorkerTool]:
    @worker_tool(name="lookup")
    async def lookup(query: str) -> str:
        """Look something up (idempotent)."""
        await asyncio.sleep(random.uniform(*TOOL_SECONDS))
        return f"found {query}"

    @worker_tool(name="record_payment", idempotent=False, timeout_s=60)
    async def record_payment(entry: str, ctx: ToolContext) -> str:
        """Record a payment: running one call twice records it twice."""
        with ledger.open("a") as handle:
            handle.write(f"{ctx.call_id}\n")
        await asyncio.sleep(random.uniform(*TOOL_SECONDS))
        return f"recorded {entry}"

    return [lookup, record_payment]


async def main(address: str, task_queue: str, data_dir: str, ledger: str) -> None:
    settings = chaos_settings(task_queue, Path(data_dir))
    settings.workspace.mkdir(parents=True, exist_ok=True)
    client = await connect(address=address, from_env=False, settings=settings)
    timeout_s = float(os.environ.get("CHAOS_PROVIDER_TIMEOUT_S", "8"))
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=worker_workflows(),
        workflow_runner=workflow_runner(),
        activities=build_activities(
            settings,
            client=client,
            providers={"anthropic": AnthropicProvider(timeout_s=timeout_s)},
            tools=ToolRegistry(chaos_tools(Path(ledger))),
        ),
    )
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
