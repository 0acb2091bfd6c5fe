"""`python -m bench.providers`: what prompt caching saves and what a dead primary costs, measured
in one run on a fresh embedded dev server, with the real worker, the real SDKs and the fake APIs
of `tests/fakes` over HTTP.

1. Prompt caching: the input cost of a 30-iteration turn on Anthropic with `prompt_cache` on
   against off. The fake reports `cache_read_input_tokens` / `cache_creation_input_tokens` as
   the API documents them (`tests/fakes/anthropic_cache.py`); the cost is the report's,
   priced from `contracts/pricing.json` (claude-sonnet-4-6: input $3, cache read $0.30, cache write
   $3.75 per million tokens).
2. A dead primary: the wall time a 10-iteration turn loses when its Anthropic primary answers
   only 529 and an OpenAI-compatible fallback answers instead, with the default cooldown (60 s)
   against none (`fallback_cooldown_s: 0`), both with `fallback_after_attempts: 2`; the loss is
   measured against the same turn on a healthy primary.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker
from turnkeeper.activities.providers.anthropic_provider import AnthropicProvider
from turnkeeper.activities.providers.openai_provider import OpenAICompatibleProvider
from turnkeeper.contracts.names import WORKFLOW_TYPE
from turnkeeper.contracts.pricing import PRICING_TABLE, cache_read_price, cache_write_price
from turnkeeper.contracts.turn import AgentReport, Usage

from bench.server import BenchServer
from bench.turnkeeper_side import bench_data_converter
from tests.fakes import fake_anthropic as anthropic
from tests.fakes import openai_replies as openai
from tests.fakes.fake_anthropic import FakeAnthropic, start_fake_anthropic
from tests.fakes.fake_openai import FakeOpenAI, start_fake_openai
from turnkeeper.worker.logging import configure_logging
from turnkeeper.worker.settings import Settings
from turnkeeper.worker.wiring import build_activities, worker_workflows, workflow_runner

SONNET = "anthropic:claude-sonnet-4-6"
GPT = "openai:gpt-4.1"
CACHE_ITERATIONS = 30
FALLBACK_ITERATIONS = 10
# An agent's instructions of a realistic length (about 2,000 tokens by the fake's count).
SYSTEM_PROMPT = "Follow the house rules for research notes, cite each file you read. " * 115
NOTE = "".join(f"line {i:03}: observations of the north light were recorded\n" for i in range(60))


def input_cost_usd(usage: Usage) -> float:
    price = PRICING_TABLE[SONNET]
    return (
        usage.input_tokens * price.input_per_mtok
        + usage.cache_read_tokens * cache_read_price(price)
        + usage.cache_write_tokens * cache_write_price(price)
    ) / 1_000_000


async def cache_figure(client: Client, queue: str, fake: FakeAnthropic) -> dict[str, Any]:
    rows = {}
    for cached in (True, False):
        key = f"cache-{'on' if cached else 'off'}-{uuid.uuid4().hex[:6]}"
        reads = [anthropic.tool_calls(("read_file", {"path": "note.md"}))]
        fake.script(
            key, reads * (CACHE_ITERATIONS - 1) + [anthropic.text("Done.")], prompt_cache=True
        )
        agent = {"prompt_cache": cached, "max_iterations": CACHE_ITERATIONS}
        report = await _run(client, queue, key, SONNET, agent)
        assert report.iterations == CACHE_ITERATIONS, report.iterations
        rows["on" if cached else "off"] = {
            "input_cost_usd": round(input_cost_usd(report.usage), 6),
            "usage": report.usage.model_dump(),
        }
    rows["ratio_on_to_off"] = round(rows["on"]["input_cost_usd"] / rows["off"]["input_cost_usd"], 3)
    return rows


async def fallback_figure(
    client: Client, queue: str, dead: FakeAnthropic, fallback: FakeOpenAI
) -> dict[str, Any]:
    listing = openai.tool_calls(("list_files", {"path": "."}))
    steps = [listing] * (FALLBACK_ITERATIONS - 1) + [openai.text("Done.")]
    walls = {}
    for name, cooldown in (("healthy", None), ("cooldown_60s", 60), ("no_cooldown", 0)):
        key = f"fallback-{name}-{uuid.uuid4().hex[:6]}"
        fallback.script(key, steps)
        dead.script(key, [anthropic.overloaded()] * FALLBACK_ITERATIONS)
        agent: dict[str, Any] = {"max_iterations": FALLBACK_ITERATIONS, "tools": ["list_files"]}
        if cooldown is None:
            model = GPT
        else:
            model = SONNET
            agent |= {"fallback_models": [GPT], "fallback_cooldown_s": cooldown}
        started = time.perf_counter()
        report = await _run(client, queue, key, model, agent)
        walls[name] = time.perf_counter() - started
        assert report.iterations == FALLBACK_ITERATIONS and report.output == "Done."
        walls[f"{name}_primary_requests"] = len(dead.requests_for(key))
    return {
        "wall_s": {k: round(v, 2) for k, v in walls.items() if not k.endswith("requests")},
        "primary_requests": {k: v for k, v in walls.items() if k.endswith("requests")},
        "lost_s_with_cooldown": round(walls["cooldown_60s"] - walls["healthy"], 2),
        "lost_s_without_cooldown": round(walls["no_cooldown"] - walls["healthy"], 2),
    }


async def _run(
    client: Client, queue: str, key: str, model: str, agent: dict[str, Any]
) -> AgentReport:
    request = {
        "agent": {
            "id": "bench-providers",
            "model": model,
            "system_prompt": f"{SYSTEM_PROMPT}[script:{key}]",
            "tools": ["list_files", "read_file"],
            **agent,
        },
        "task": {"id": key, "input": "Read the note again and again."},
    }
    handle = await client.start_workflow(
        WORKFLOW_TYPE, request, id=f"bench-{key}", task_queue=queue, result_type=AgentReport
    )
    return await handle.result()


@asynccontextmanager
async def _worker(
    client: Client, folder: Path, fake: FakeAnthropic, fallback: FakeOpenAI
) -> AsyncIterator[str]:
    queue = f"bench-providers-{uuid.uuid4().hex[:8]}"
    workspace = folder / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "note.md").write_text(NOTE)
    settings = Settings(
        task_queue=queue, workspace=workspace, data_dir=folder, store_dir=folder / "store"
    )
    providers: dict[str, Any] = {
        "anthropic": AnthropicProvider(api_key="bench", base_url=fake.base_url),
        "openai": OpenAICompatibleProvider(api_key="bench", base_url=f"{fallback.base_url}/v1"),
    }
    activities = build_activities(settings, client=client, providers=providers)
    async with Worker(
        client,
        task_queue=queue,
        workflows=worker_workflows(),
        workflow_runner=workflow_runner(),
        activities=activities,
    ):
        yield queue


async def main_async() -> dict[str, Any]:
    server = BenchServer()
    try:
        async with server, start_fake_anthropic() as fake, start_fake_openai() as fallback:
            data_dir = server.folder / "turnkeeper"
            client = await Client.connect(
                server.address, data_converter=bench_data_converter(data_dir)
            )
            async with _worker(client, data_dir, fake, fallback) as queue:
                return {
                    "prompt_cache": await cache_figure(client, queue, fake),
                    "dead_primary": await fallback_figure(client, queue, fake, fallback),
                }
    finally:
        shutil.rmtree(server.folder, ignore_errors=True)


def render(results: dict[str, Any]) -> str:
    cache, dead = results["prompt_cache"], results["dead_primary"]
    on, off = cache["on"], cache["off"]
    walls = dead["wall_s"]
    return "\n".join(
        [
            "| figure | measured |",
            "|---|---|",
            f"| input cost of a {CACHE_ITERATIONS}-iteration turn, prompt_cache on / off | "
            f"${on['input_cost_usd']:.4f} / ${off['input_cost_usd']:.4f} "
            f"({cache['ratio_on_to_off']:.2f}×; {on['usage']['cache_read_tokens']:,} tokens read "
            f"from the cache, {on['usage']['cache_write_tokens']:,} written) |",
            f"| wall time a {FALLBACK_ITERATIONS}-iteration turn loses to a dead primary, "
            f"cooldown 60 s / none | {dead['lost_s_with_cooldown']:.1f} s / "
            f"{dead['lost_s_without_cooldown']:.1f} s (turn: {walls['cooldown_60s']:.1f} s / "
            f"{walls['no_cooldown']:.1f} s against {walls['healthy']:.1f} s healthy; the dead "
            f"primary was called {dead['primary_requests']['cooldown_60s_primary_requests']} / "
            f"{dead['primary_requests']['no_cooldown_primary_requests']} times) |",
        ]
    )


def main() -> None:
    # The dead primary's 529s are expected here: no activity-failure tracebacks on stderr.
    configure_logging("ERROR")
    results = asyncio.run(main_async())
    sys.stdout.write(render(results) + "\n")


if __name__ == "__main__":
    main()
