"""The A2A activities against a remote agent on a2a-sdk's own server (a process of its own),
without a workflow: a token that rotates under a running worker is read again on the agent's 401
and the request sent once more; a send that Temporal runs again carries the same message id;
a worker without `TURNKEEPER_A2A_CONFIG` answers every call as unknown without the SDK."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.a2a.a2a_activity import A2aActivities
from turnkeeper.activities.a2a.config import A2aAgentConfig, A2aConfig
from turnkeeper.activities.a2a.unconfigured import NoA2aAgents
from turnkeeper.activities.credentials import CredentialSource
from turnkeeper.contracts.a2a import (
    A2aDescribeInput,
    A2aSendInput,
    A2aTaskHandle,
    A2aTaskInput,
)
from turnkeeper.contracts.a2a_agents import A2aAgentRef

from tests.support.mcp_http_process import A2A_AGENT, HttpServerProcess
from turnkeeper.payloads.content_store import LocalFolderStore


@pytest.fixture
async def guarded_agent(tmp_path: Path) -> AsyncIterator[tuple[Path, HttpServerProcess]]:
    server_token = tmp_path / "server-token"
    server_token.write_text("token-one\n")
    process = HttpServerProcess(script=A2A_AGENT, bearer_file=server_token)
    await process.start()
    try:
        yield server_token, process
    finally:
        await process.kill()


def activities(tmp_path: Path, agent: A2aAgentConfig) -> A2aActivities:
    store = LocalFolderStore(tmp_path / "store")
    return A2aActivities(A2aConfig(agents={agent.name: agent}), store)


async def message_ids(remote: HttpServerProcess) -> list[str]:
    async with httpx.AsyncClient() as http:
        return (await http.get(f"{remote.base_url}/stats")).json()["message_ids"]


async def test_a_rotated_token_is_read_again_on_a_401_and_the_call_goes_through(
    tmp_path: Path, guarded_agent: tuple[Path, HttpServerProcess]
) -> None:
    server_token, remote = guarded_agent
    worker_token = tmp_path / "worker-token"
    worker_token.write_text("token-one\n")
    bearer = CredentialSource(file=worker_token)
    lab = activities(tmp_path, A2aAgentConfig(name="lab", url=f"{remote.base_url}/", bearer=bearer))
    env = ActivityEnvironment()
    try:
        first = await env.run(
            lab.a2a_send_message, A2aSendInput(call_id="c1", agent="lab", message="hello")
        )
        assert first.result is not None and first.result.content == "hello yourself"

        server_token.write_text("token-two\n")  # the agent's side rotates first...
        worker_token.write_text("token-two\n")  # ...and the worker's file is renewed
        second = await env.run(
            lab.a2a_send_message, A2aSendInput(call_id="c2", agent="lab", message="hello")
        )
        assert second.result is not None and second.result.content == "hello yourself"
        assert not second.result.is_error
    finally:
        await lab.aclose()


async def test_a_token_the_agent_refuses_is_an_error_result_without_the_token(
    tmp_path: Path, guarded_agent: tuple[Path, HttpServerProcess]
) -> None:
    _, remote = guarded_agent
    worker_token = tmp_path / "worker-token"
    worker_token.write_text("token-stale-secret\n")
    bearer = CredentialSource(file=worker_token)
    lab = activities(tmp_path, A2aAgentConfig(name="lab", url=f"{remote.base_url}/", bearer=bearer))
    try:
        env = ActivityEnvironment()
        described = await env.run(
            lab.a2a_describe_agents, A2aDescribeInput(agents=[A2aAgentRef(name="lab")])
        )
        sent = await env.run(
            lab.a2a_send_message, A2aSendInput(call_id="c1", agent="lab", message="hello")
        )
    finally:
        await lab.aclose()
    [error] = described.errors
    assert "its card could not be read" in error and "401" in error
    assert sent.result is not None and sent.result.is_error and "401" in sent.result.content
    assert "token-stale-secret" not in error + sent.result.content
    assert await message_ids(remote) == []


async def test_a_send_run_again_carries_the_same_message_id(tmp_path: Path) -> None:
    remote = HttpServerProcess(script=A2A_AGENT)
    await remote.start()
    lab = activities(tmp_path, A2aAgentConfig(name="lab", url=f"{remote.base_url}/"))
    try:
        send = A2aSendInput(
            turn_id="turn-7", call_id="toolu_1", agent="lab", message="research 0 x"
        )
        for _ in range(2):  # as Temporal's retry after a lost worker would
            await ActivityEnvironment().run(lab.a2a_send_message, send)
        assert await message_ids(remote) == ["turnkeeper:turn-7/toolu_1"] * 2
    finally:
        await lab.aclose()
        await remote.kill()


async def test_a_card_that_sends_requests_elsewhere_is_refused(tmp_path: Path) -> None:
    remote = HttpServerProcess(script=A2A_AGENT)
    await remote.start()
    url = f"{remote.base_url}/elsewhere/agent-card.json"
    lab = activities(tmp_path, A2aAgentConfig(name="lab", url=url, headers={"X-Key": "k"}))
    try:
        refs = [A2aAgentRef(name="lab")]
        described = await ActivityEnvironment().run(
            lab.a2a_describe_agents, A2aDescribeInput(agents=refs)
        )
        assert await message_ids(remote) == []
    finally:
        await lab.aclose()
        await remote.kill()
    [error] = described.errors
    assert f"its card sends requests to 'http://localhost:{remote.port}/'" in error
    assert f"not to http://127.0.0.1:{remote.port}" in error


async def test_a_worker_without_agents_answers_every_call_as_unknown(tmp_path: Path) -> None:
    none = NoA2aAgents(LocalFolderStore(tmp_path / "store"))
    env = ActivityEnvironment()
    described = await env.run(
        none.a2a_describe_agents, A2aDescribeInput(agents=[A2aAgentRef(name="lab")])
    )
    sent = await env.run(
        none.a2a_send_message, A2aSendInput(call_id="c", agent="lab", message="hi")
    )
    task = A2aTaskHandle(agent="lab", task_id="t-1")
    polled = await env.run(none.a2a_get_task, A2aTaskInput(call_id="c", tool="lab", task=task))
    cancelled = await env.run(
        none.a2a_cancel_task, A2aTaskInput(call_id="c", tool="lab", task=task)
    )
    assert described.errors == [
        "A2A agent 'lab' is not configured on this worker (configured: none)"
    ]
    assert sent.result is not None and sent.result.is_error
    assert polled.result is not None and polled.result.is_error
    assert not cancelled.cancelled


def test_a_worker_without_agents_never_imports_the_a2a_sdk() -> None:
    script = (
        "import sys; from turnkeeper.worker import wiring; "
        "assert 'a2a' not in sys.modules, 'a2a imported'"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
