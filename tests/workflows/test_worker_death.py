"""A worker killed (SIGKILL) in the middle of a non-idempotent tool call: the effect is never
run a second time, and the model is told it may or may not have happened."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from temporalio.api.enums.v1 import TimeoutType
from temporalio.client import Client
from turnkeeper.activities.providers.anthropic_provider import AnthropicProvider
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import WORKFLOW_TYPE
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support import history_facts
from tests.support.ledger_worker import ledger_worker

ROOT = Path(__file__).parent.parent.parent


async def wait_for_line(path: Path, text: str, timeout_s: float = 30) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if path.exists() and text in path.read_text():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {path}")


async def test_killed_worker_mid_call_never_repeats_a_non_idempotent_effect(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(
        key, [fake.tool_calls(("append_ledger", {"entry": "pay 10"})), fake.text("checked")]
    )
    task_queue = f"tq-{uuid.uuid4()}"
    ledger = tmp_path / "ledger.txt"
    env = {**os.environ, "ANTHROPIC_BASE_URL": fake_anthropic.base_url, "ANTHROPIC_API_KEY": "k"}
    address = client.service_client.config.target_host
    doomed = subprocess.Popen(  # noqa: ASYNC220 (started once, killed below)
        [sys.executable, "-m", "tests.support.ledger_worker", address, task_queue, str(ledger),
         str(tmp_path / "data")],
        cwd=ROOT, env=env,
    )  # fmt: skip
    handle = await client.start_workflow(
        WORKFLOW_TYPE,
        scripted_request(key, agent={"tools": ["append_ledger"]}),
        id=f"turn-{uuid.uuid4()}",
        task_queue=task_queue,
        result_type=AgentReport,
    )
    await wait_for_line(ledger, "started pay 10")
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait()

    anthropic = AnthropicProvider(api_key="k", base_url=fake_anthropic.base_url)
    survivor = ledger_worker(client, task_queue, ledger, tmp_path / "data", 0, anthropic)
    async with survivor:
        report = await handle.result()

    [result] = [b for b in report.messages[2].content if isinstance(b, ToolResultBlock)]
    assert result.is_error
    assert "may or may not have completed" in result.text()
    assert "not idempotent" in result.text()
    assert ledger.read_text().splitlines() == ["started pay 10"]  # never run a second time
    assert report.output == "checked"
    # Noticed through the tool's heartbeat timeout, not its own (much longer) start-to-close.
    assert await history_facts.timeout_types(handle) == [TimeoutType.TIMEOUT_TYPE_HEARTBEAT]
