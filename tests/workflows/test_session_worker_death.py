"""A worker killed (SIGKILL) between two turns of a session loses nothing: another worker
replays the session from its history and the next turn still continues the conversation."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from temporalio.client import Client
from turnkeeper.activities.providers.anthropic_provider import AnthropicProvider

from tests.conftest import new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.ledger_worker import ledger_settings, ledger_worker
from tests.support.waiting import until
from turnkeeper.client.connection import connect
from turnkeeper.client.sessions import session as session_handle
from turnkeeper.client.sessions import start_session

ROOT = Path(__file__).parent.parent.parent


async def test_a_worker_killed_between_turns_loses_nothing(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(key, [fake.text("Noted: blue."), fake.text("You said blue.")])
    task_queue = f"tq-{uuid.uuid4()}"
    data_dir = tmp_path / "data"
    env = {**os.environ, "ANTHROPIC_BASE_URL": fake_anthropic.base_url, "ANTHROPIC_API_KEY": "k"}
    address = client.service_client.config.target_host
    doomed = subprocess.Popen(  # noqa: ASYNC220 (started once, killed below)
        [sys.executable, "-m", "tests.support.ledger_worker", address, task_queue,
         str(tmp_path / "ledger.txt"), str(data_dir)],
        cwd=ROOT, env=env,
    )  # fmt: skip
    # Every client of a turn reads the worker's store: the same converter the worker builds.
    worker_client = await connect(
        address=address, from_env=False, settings=ledger_settings(task_queue, data_dir)
    )
    session_id = f"session-{key}"
    try:
        session = await start_session(
            worker_client,
            session_id=session_id,
            agent=scripted_request(key, agent={"tools": ["append_ledger"]})["agent"],
            task_queue=task_queue,
        )
        first = await session.send("My favourite colour is blue.")
        assert (await first.result()).output == "Noted: blue."
        await _until_idle(session_id, worker_client)
    finally:
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait()

    anthropic = AnthropicProvider(api_key="k", base_url=fake_anthropic.base_url)
    survivor = ledger_worker(
        worker_client, task_queue, tmp_path / "ledger.txt", data_dir, 0, anthropic
    )
    async with survivor:
        session = session_handle(worker_client, session_id)
        second = await session.send("What is my favourite colour?")
        assert second.id == f"{session_id}/turn-2"
        assert (await second.result()).output == "You said blue."
        await _until_idle(session_id, worker_client)
        messages = [message.text() for message in await session.messages()]
        status = await session.status()

    sent = fake_anthropic.requests_for(key)[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert "My favourite colour is blue." in str(sent[0]) and "Noted: blue." in str(sent[1])
    assert messages == [
        "My favourite colour is blue.",
        "Noted: blue.",
        "What is my favourite colour?",
        "You said blue.",
    ]
    assert (status.turns, status.state) == (2, "idle")


async def _until_idle(session_id: str, client: Client) -> None:
    handle = session_handle(client, session_id)
    await until(
        handle.status,
        lambda status: status.running_turn_id is None,
        "the session records its turn's end",
    )
