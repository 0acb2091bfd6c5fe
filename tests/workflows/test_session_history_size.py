"""A session of 200 turns keeps a small history: it continues as new when Temporal suggests it,
carrying references, so each run's history holds only its own turns, and the conversation is
read back from the store (the `messages` query still has all of it)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from turnkeeper.contracts.names import SEARCH_ATTRIBUTES

from tests.conftest import (
    SA_KEYS,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
    temporal_binary,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.history_facts import where_they_stand
from tests.support.waiting import within
from tests.workflows.test_sessions import _settled
from turnkeeper.client.sessions import start_session
from turnkeeper.payloads.content_store import ContentStore
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.payload_storage import turn_data_converter

TURNS = 200
# Temporal suggests continue-as-new after 4 Ki events by default; 120 makes a 200-turn session
# cross many runs in a test of reasonable length (about 17 events a turn).
SUGGEST_AFTER_EVENTS = 120
# Each run holds a handful of turns of a few hundred bytes each: far under this, and the bound
# does not move with the number of turns before it.
RUN_BYTES_BOUND = 48 * 1024


@pytest.fixture(scope="module")
async def eager_env(
    payload_store: ContentStore, keyring: Keyring
) -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        data_converter=turn_data_converter(payload_store, keyring),
        dev_server_existing_path=temporal_binary("temporal"),
        search_attributes=[SA_KEYS[kind](name) for name, kind in SEARCH_ATTRIBUTES.items()],
        dev_server_extra_args=[
            "--dynamic-config-value",
            f"limit.historyCount.suggestContinueAsNew={SUGGEST_AFTER_EVENTS}",
        ],
    )
    async with env:
        yield env


async def run_sizes(client: Client, workflow_id: str) -> list[tuple[int, int]]:
    """(events, bytes) of every run of a workflow, oldest first."""
    sizes = []
    async for execution in client.list_workflows(f'WorkflowId = "{workflow_id}"'):
        handle = client.get_workflow_handle(workflow_id, run_id=execution.run_id)
        described = await handle.describe()
        info = described.raw_description.workflow_execution_info
        sizes.append((info.start_time.ToDatetime(), info.history_length, info.history_size_bytes))
    return [(events, size) for _, events, size in sorted(sizes)]


# A step takes well under a second alone; one that stalls fails the test at once, saying where.
STEP_S = 90


# About a minute alone; the default 120 s leaves too little room on a shared machine.
@pytest.mark.timeout(600)
async def test_a_200_turn_session_keeps_a_bounded_history(
    eager_env: WorkflowEnvironment, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    client = eager_env.client
    key = new_key()
    fake_anthropic.script(key, [fake.text(f"Answer {n}.") for n in range(1, TURNS + 1)])
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    session_id = f"session-{key}"

    async with running_worker(client, settings, fake_anthropic):
        session = await start_session(
            client,
            session_id=session_id,
            agent=scripted_request(key)["agent"],
            task_queue=settings.task_queue,
        )
        for n in range(1, TURNS + 1):
            turn_id = f"{session_id}/turn-{n}"

            def standing(turn_id: str = turn_id) -> Awaitable[str]:
                return where_they_stand(client, session_id, turn_id)

            turn = await within(session.send(f"Question {n}?"), f"send {n}", STEP_S, standing)
            report = await within(turn.result(), f"turn {n}'s result", STEP_S, standing)
            assert report.output == f"Answer {n}."
        # The session records a turn's end a moment after the turn's result is readable.
        status = await _settled(session)
        # A run that just continued as new reads the conversation back with an activity; the
        # client waits for that read, so the first answer is the whole conversation.
        messages = await session.messages()
        sizes = await run_sizes(client, session_id)
        last_request = fake_anthropic.requests_for(key)[-1].body["messages"]
        await session.close()

    assert status.turns == TURNS
    # Every exchange is in the conversation, also those of earlier runs (read back by reference).
    assert len(messages) == 2 * TURNS
    assert messages[0].text() == "Question 1?" and messages[-1].text() == f"Answer {TURNS}."
    assert len(last_request) == 2 * TURNS - 1
    runs = len(sizes)
    largest = max(size for _, size in sizes)
    total = sum(size for _, size in sizes)
    print(
        f"200-turn session: {runs} runs, largest run {largest} B "
        f"({max(e for e, _ in sizes)} events), all runs {total} B, last run {sizes[-1][1]} B"
    )
    assert runs >= 10
    assert largest < RUN_BYTES_BOUND
    # Bounded, not growing: the runs late in the conversation are no larger than the early ones.
    early = max(size for _, size in sizes[1:4])
    late = max(size for _, size in sizes[-4:-1])
    assert late <= early * 1.25, (early, late)
