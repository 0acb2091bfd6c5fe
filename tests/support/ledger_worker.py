"""A worker process whose one tool, `append_ledger`, is not idempotent and slow, for the test
that kills a worker in the middle of such a call.

    python -m tests.support.ledger_worker ADDRESS TASK_QUEUE LEDGER_FILE DATA_DIR
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from temporalio.client import Client
from temporalio.worker import Worker
from turnkeeper.activities.providers.anthropic_provider import AnthropicProvider
from turnkeeper.activities.providers.demo_provider import DemoProvider
from turnkeeper.activities.tools.registry import ToolRegistry, WorkerTool, worker_tool

from turnkeeper.client.connection import connect
from turnkeeper.worker.settings import Settings
from turnkeeper.worker.wiring import build_activities, worker_workflows


def ledger_tool(ledger: Path, seconds: float) -> WorkerTool:
    @worker_tool(name="append_ledger", idempotent=False, timeout_s=120)
    async def append_ledger(entry: str) -> str:
        """Append an entry to the ledger (slowly): running it twice writes it twice."""
        with ledger.open("a") as handle:
            handle.write(f"started {entry}\n")
        await asyncio.sleep(seconds)
        with ledger.open("a") as handle:
            handle.write(f"done {entry}\n")
        return f"appended {entry}"

    return append_ledger


def ledger_worker(
    client: Client,
    task_queue: str,
    ledger: Path,
    data_dir: Path,
    seconds: float,
    anthropic: AnthropicProvider | None = None,
) -> Worker:
    settings = ledger_settings(task_queue, data_dir)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=worker_workflows(),
        activities=build_activities(
            settings,
            client=client,
            providers={"anthropic": anthropic or _anthropic(), "demo": DemoProvider()},
            tools=ToolRegistry([ledger_tool(ledger, seconds)]),
        ),
    )


def ledger_settings(task_queue: str, data_dir: Path) -> Settings:
    return Settings(
        task_queue=task_queue,
        workspace=data_dir / "workspace",
        data_dir=data_dir,
        store_dir=data_dir / "store",
    )


def _anthropic() -> AnthropicProvider:
    return AnthropicProvider()  # ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY from the environment


async def main(address: str, task_queue: str, ledger: str, data_dir: str) -> None:
    # The converter every worker builds, keys from TURNKEEPER_ENCRYPTION_KEYS included.
    settings = ledger_settings(task_queue, Path(data_dir))
    client = await connect(address=address, from_env=False, settings=settings)
    worker = ledger_worker(client, task_queue, Path(ledger), Path(data_dir), seconds=60)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
