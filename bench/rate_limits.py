"""`python -m bench.rate_limits [--turns N] [--rpm N] [--workers N]`: rate limits shared by the
fleet (`TURNKEEPER_RATE_LIMITS`), measured in one run on a fresh embedded dev server with the
real worker and the real Anthropic SDK against the fake API of `turnkeeper/testing`.

1. The ledger's ceiling: how many `acquire` decisions per second one `RateLimiterWorkflow`
   sustains (8 askers per key in a loop, every ask granted: the server admits 10 updates in
   flight per workflow), and four ledgers (four keys) at once: a key is one workflow whose
   updates run one at a time, so the fleet scales by keys.
2. The fleet: `--turns` one-call turns started at once on `--workers` workers (each on a task
   queue of its own: the SDK allows one worker per queue in a process, and the limit spans
   queues) with `requests_per_minute: --rpm`, against a fake provider that answers 429 above
   `--rpm` requests in any 60 seconds: the most requests the provider saw in any 60 s, its 429s
   (and those after the first minute), and the wall time against the ideal.

The turns here have no tenant (`turns_by_tenant` has the one row `(none)`); tenants' fair shares
and caps under the same limits are measured by `bench.fleet`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import shutil
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from temporalio.client import Client, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.worker import Worker
from turnkeeper.activities.providers.anthropic_provider import AnthropicProvider
from turnkeeper.contracts.names import WORKFLOW_TYPE
from turnkeeper.contracts.rate_limits import (
    RATE_LIMITER_WORKFLOW,
    UPDATE_ACQUIRE,
    AcquireInput,
    AcquireResult,
    RateLimit,
    RateLimiterInput,
    rate_limiter_id,
)
from turnkeeper.contracts.turn import AgentReport

from bench.server import BenchServer
from bench.turnkeeper_side import bench_data_converter
from tests.fakes import fake_anthropic as anthropic
from tests.fakes.fake_anthropic import FakeAnthropic, start_fake_anthropic
from tests.fakes.provider_rate_limit import ProviderRateLimit
from turnkeeper.worker.logging import configure_logging
from turnkeeper.worker.settings import Settings
from turnkeeper.worker.wiring import build_activities, worker_workflows, workflow_runner

ASKERS_PER_KEY = 8
CEILING_S = 10.0


async def ceiling(client: Client, queue: str, keys: int) -> float:
    """Decisions per second that `keys` ledgers sustain together, every ask granted."""
    unlimited = RateLimit(requests_per_minute=10**9)
    names = [f"bench:ceiling-{uuid.uuid4().hex[:6]}" for _ in range(keys)]
    decided = 0
    deadline = time.monotonic() + CEILING_S

    async def asker(key: str) -> None:
        nonlocal decided
        while time.monotonic() < deadline:
            start = WithStartWorkflowOperation(
                RATE_LIMITER_WORKFLOW,
                RateLimiterInput(key=key),
                id=rate_limiter_id(key),
                task_queue=queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            )
            ask = AcquireInput(id=uuid.uuid4().hex, limit=unlimited)
            await client.execute_update_with_start_workflow(
                UPDATE_ACQUIRE, ask, start_workflow_operation=start, result_type=AcquireResult
            )
            decided += 1

    began = time.monotonic()
    await asyncio.gather(*(asker(names[i % keys]) for i in range(ASKERS_PER_KEY * keys)))
    for key in names:
        await client.get_workflow_handle(rate_limiter_id(key)).terminate("bench over")
    return decided / (time.monotonic() - began)


async def fleet(
    client: Client, queues: list[str], fake: FakeAnthropic, model: str, turns: int, rpm: int
) -> dict[str, Any]:
    fake.rate_limit = ProviderRateLimit(requests=rpm, window_s=60.0)
    fake.script("fleet", [anthropic.text("Done.")])
    began = time.monotonic()
    handles = []
    for k in range(turns):
        request = {
            "agent": {"id": "fleet", "model": model, "system_prompt": "[script:fleet]"},
            "task": {"id": f"fleet-{k}", "input": "Answer."},
        }
        handles.append(
            await client.start_workflow(
                WORKFLOW_TYPE,
                request,
                id=f"fleet-{uuid.uuid4().hex[:8]}",
                task_queue=queues[k % len(queues)],
                result_type=AgentReport,
            )
        )
    reports = await asyncio.gather(*(handle.result() for handle in handles))
    wall_s = time.monotonic() - began
    limit = fake.rate_limit
    return {
        "turns": turns,
        "workers": len(queues),
        "rpm_limit": rpm,
        "completed": sum(report.outcome == "completed" for report in reports),
        "most_requests_in_any_60s": limit.most_in_any_window(),
        "provider_429s": len(limit.refused),
        "provider_429s_after_first_minute": limit.refused_after(60.0),
        "wall_s": round(wall_s, 1),
        # Every request but the first `rpm` waits for a later window.
        "ideal_wall_s": 60.0 * ((turns - 1) // rpm),
        "turns_by_tenant": {"(none)": turns},
    }


@asynccontextmanager
async def _workers(
    client: Client, folder: Path, fake: FakeAnthropic, model: str, count: int, rpm: int
) -> AsyncIterator[list[str]]:
    queues = [f"bench-limits-{uuid.uuid4().hex[:8]}" for _ in range(count)]
    limits = {model: RateLimit(requests_per_minute=rpm)}
    async with AsyncExitStack() as stack:
        for queue in queues:
            settings = Settings(
                task_queue=queue,
                workspace=folder / "workspace",
                data_dir=folder,
                store_dir=folder / "store",
            )
            settings = dataclasses.replace(settings, rate_limits=limits)
            provider = AnthropicProvider(api_key="bench", base_url=fake.base_url)
            activities = build_activities(
                settings, client=client, providers={"anthropic": provider}
            )
            worker = Worker(
                client,
                task_queue=queue,
                workflows=worker_workflows(),
                workflow_runner=workflow_runner(),
                activities=activities,
            )
            await stack.enter_async_context(worker)
        yield queues


async def main_async(turns: int, rpm: int, workers: int) -> dict[str, Any]:
    server = BenchServer()
    model = f"anthropic:bench-{uuid.uuid4().hex[:6]}"
    try:
        async with server, start_fake_anthropic() as fake:
            data_dir = server.folder / "turnkeeper"
            (data_dir / "workspace").mkdir(parents=True, exist_ok=True)
            client = await Client.connect(
                server.address, data_converter=bench_data_converter(data_dir)
            )
            async with _workers(client, data_dir, fake, model, workers, rpm) as queues:
                return {
                    "ceiling_one_key_per_s": round(await ceiling(client, queues[0], 1)),
                    "ceiling_four_keys_per_s": round(await ceiling(client, queues[0], 4)),
                    "fleet": await fleet(client, queues, fake, model, turns, rpm),
                }
    finally:
        shutil.rmtree(server.folder, ignore_errors=True)


def render(results: dict[str, Any]) -> str:
    fleet_ = results["fleet"]
    return "\n".join(
        [
            "| figure | measured |",
            "|---|---|",
            f"| ledger decisions per second, one key / four keys ({ASKERS_PER_KEY} askers a key) | "
            f"{results['ceiling_one_key_per_s']} / {results['ceiling_four_keys_per_s']} |",
            f"| {fleet_['turns']} turns on {fleet_['workers']} workers, limit and provider "
            f"{fleet_['rpm_limit']} requests/min: most requests the provider saw in any 60 s | "
            f"{fleet_['most_requests_in_any_60s']} |",
            f"| the provider's 429s (after the first minute) | {fleet_['provider_429s']} "
            f"({fleet_['provider_429s_after_first_minute']}) |",
            f"| wall time, measured / ideal | {fleet_['wall_s']} s / {fleet_['ideal_wall_s']} s "
            f"({fleet_['completed']} of {fleet_['turns']} completed) |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.rate_limits")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rpm", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    configure_logging("ERROR")
    results = asyncio.run(main_async(options.turns, options.rpm, options.workers))
    sys.stdout.write(render(results) + "\n")
    sys.stdout.write(f"{results}\n")


if __name__ == "__main__":
    main()
