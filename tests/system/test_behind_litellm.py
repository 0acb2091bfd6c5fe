"""`python worker.py` behind the real LiteLLM proxy, configured as docs/behind-a-gateway.md says,
in front of the fake Anthropic API: a turn priced by the gateway under a cost budget, cache
breakpoints forwarded, a context overflow typed `LLMContextTooLong`, the upstream's retry hint
honoured, and one upstream call per attempt (the gateway's own retries off).

LiteLLM is a separate program with its own large dependency tree, as a gateway is in
production: `.ci/run` installs it into a venv of its own and names its `litellm` command in
`TURNKEEPER_TEST_LITELLM`. Without that variable these tests are skipped, saying so.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as anthropic
from tests.support.ports import free_ports
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.driving import agent, connect_like, task
from turnkeeper.client.errors import TurnError

LITELLM = os.environ.get("TURNKEEPER_TEST_LITELLM")
pytestmark = pytest.mark.skipif(
    not LITELLM, reason="TURNKEEPER_TEST_LITELLM names no litellm command (.ci/run installs one)"
)
MASTER_KEY = f"sk-litellm-{uuid.uuid4().hex}"
MODEL = "gw:claude-behind-litellm"  # a model name our pricing table does not know

# The proxy settings the docs recommend in front of a durable runtime: no retries, no cooldowns,
# since Temporal retries the model call itself (LiteLLM's own would multiply with ours).
CONFIG = """\
model_list:
  - model_name: claude-behind-litellm
    litellm_params:
      model: anthropic/claude-sonnet-4-6
      api_base: {upstream}
      api_key: os.environ/UPSTREAM_KEY
general_settings:
  master_key: os.environ/LITELLM_MASTER_KEY
litellm_settings:
  num_retries: 0
  request_timeout: 600
router_settings:
  num_retries: 0
  allowed_fails: 1000
  cooldown_time: 0
"""


@contextmanager
def litellm_proxy(upstream: str, folder: Path) -> Iterator[str]:
    """The proxy as its docs start it, on a free port; its base URL."""
    assert LITELLM is not None
    [port] = free_ports(1)
    config = folder / "litellm.yaml"
    config.write_text(CONFIG.format(upstream=upstream))
    log = (folder / "litellm.log").open("wb")
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(folder)),
        "LITELLM_MASTER_KEY": MASTER_KEY,
        "UPSTREAM_KEY": "test-key",
        "LITELLM_TELEMETRY": "False",
    }
    process = subprocess.Popen(
        [LITELLM, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        cwd=folder,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


async def wait_until_listening(url: str) -> None:
    host, port = url.removeprefix("http://").split(":")

    async def listening() -> bool:
        try:
            socket.create_connection((host, int(port)), timeout=0.5).close()
        except OSError:
            return False
        return True

    await until(listening, bool, "the LiteLLM proxy to listen", within_s=180)


@pytest.fixture
async def gateway_worker(stack: SystemStack, tmp_path: Path) -> AsyncIterator[WorkerProcess]:
    with litellm_proxy(stack.fake.base_url, tmp_path) as proxy:
        await wait_until_listening(proxy)
        endpoint = {
            "kind": "openai",
            "base_url": f"{proxy}/v1",
            "api_key_env": "GATEWAY_KEY",
            "reports_cost": True,
            "cache_control": True,
        }
        yield await stack.start_worker(
            env={"TURNKEEPER_PROVIDERS": json.dumps({"gw": endpoint}), "GATEWAY_KEY": MASTER_KEY}
        )


async def test_a_budgeted_turn_behind_litellm_is_priced_by_the_gateway(
    stack: SystemStack, gateway_worker: WorkerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    stack.fake.script(
        key, [anthropic.tool_calls(("list_files", {"path": "."})), anthropic.text("Empty.")]
    )
    client = await connect_like(gateway_worker, monkeypatch)
    fields = {"tools": ["list_files"], "stream": True}

    handle = await turnkeeper.start_turn(
        client,
        agent=agent(key, MODEL, **fields),
        task=task(key) | {"constraints": {"cost_budget_usd": 1.0}},
        task_queue=gateway_worker.task_queue,
    )
    report = await handle.result()

    assert report.output == "Empty." and report.unpriced_calls == 0
    assert [call.priced_by for call in report.priced_calls] == ["provider", "provider"]
    assert report.cost_usd > 0
    upstream = stack.fake.requests_for(key)
    assert len(upstream) == 2
    assert "cache_control" in json.dumps(upstream[-1].body)  # breakpoints reached Anthropic


async def test_errors_behind_litellm_keep_their_meaning(
    stack: SystemStack, gateway_worker: WorkerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    overflow, limited = new_key(), new_key()
    too_long = "prompt is too long: 208310 tokens > 200000 maximum"
    stack.fake.script(overflow, [anthropic.error(400, "invalid_request_error", too_long)])
    stack.fake.script(
        limited, [[anthropic.rate_limited(retry_after=1), anthropic.text("After the wait.")]]
    )
    client = await connect_like(gateway_worker, monkeypatch)

    failed = await turnkeeper.start_turn(
        client, agent=agent(overflow, MODEL), task=task(overflow),
        task_queue=gateway_worker.task_queue,
    )  # fmt: skip
    with pytest.raises(TurnError) as raised:
        await failed.result()
    waited = await turnkeeper.start_turn(
        client, agent=agent(limited, MODEL), task=task(limited),
        task_queue=gateway_worker.task_queue,
    )  # fmt: skip
    report = await waited.result()

    assert raised.value.type == "LLMContextTooLong"
    assert "208310 tokens > 200000 maximum" in raised.value.message
    assert report.output == "After the wait."
    # One upstream call per attempt: the proxy's retries are off, Temporal's do the work.
    assert len(stack.fake.requests_for(overflow)) == 1
    assert len(stack.fake.requests_for(limited)) == 2
