"""The turn record: the log events of one turn, end to end, with no event twice even when every
workflow task replays or the worker is replaced mid-turn."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import structlog
from temporalio.client import Client
from turnkeeper.contracts.names import SIGNAL_APPROVE, WORKFLOW_TYPE
from turnkeeper.contracts.search_attributes import TURN_STATE
from turnkeeper.contracts.signals import ALL_PENDING
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import (
    make_settings,
    new_key,
    running_worker,
    scripted_request,
    wait_for_pending,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.waiting import until

USAGE = {"input_tokens": 1000, "output_tokens": 100}
# claude-sonnet-4-6: $3 / $15 per million tokens.
CALL_COST = (1000 * 3 + 100 * 15) / 1e6


def script(fake_api: FakeAnthropic) -> str:
    key = new_key()
    fake_api.script(
        key,
        [
            fake.tool_calls(("list_files", {"path": "."}), usage=USAGE),
            fake.tool_calls(("write_file", {"path": "a.md", "content": "x"}), usage=USAGE),
            fake.text("Done.", usage=USAGE),
        ],
    )
    return key


def workflow_events(caplog: pytest.LogCaptureFixture) -> list[tuple[str, logging.LogRecord]]:
    return [
        (str(record.msg).split(" ", 1)[0], record)
        for record in caplog.records
        if record.name == "temporalio.workflow"
    ]


@contextmanager
def activity_events() -> Iterator[list[dict[str, Any]]]:
    with structlog.testing.capture_logs() as captured:
        yield captured


async def start(client: Client, queue: str, key: str) -> Any:
    return await client.start_workflow(
        WORKFLOW_TYPE,
        scripted_request(key),
        id=f"turn-{uuid.uuid4()}",
        task_queue=queue,
        result_type=AgentReport,
    )


async def test_one_turn_logs_its_record_once_even_when_every_task_replays(
    client: Client,
    fake_anthropic: FakeAnthropic,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="temporalio.workflow")
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    key = script(fake_anthropic)

    with activity_events() as activity_log:
        # No workflow cache: every workflow task replays the history from the start.
        async with running_worker(client, settings, fake_anthropic, max_cached_workflows=0):
            handle = await start(client, settings.task_queue, key)
            # Read from the turn's search attributes, not by a query: without a cache the worker
            # answers a query by replaying the turn, and one that meets a workflow task in flight
            # runs that task's new code twice, as no cached worker does.
            await until(
                handle.describe,
                lambda seen: seen.typed_search_attributes.get(TURN_STATE) == "awaiting_approval",
                "the write waits for approval",
            )
            await handle.signal(SIGNAL_APPROVE, {"call_id": ALL_PENDING, "approved": True})
            report = await handle.result()

    names = [name for name, _ in workflow_events(caplog)]
    assert names == ["turn_started", "approval_requested", "approval_decided", "turn_completed"]
    completed = workflow_events(caplog)[-1][1]
    assert completed.agent_id == "test-agent"
    assert completed.task_id == f"task-{key}"
    assert completed.workflow_id == handle.id
    assert (completed.llm_calls, completed.tool_calls, completed.outcome) == (3, 2, "completed")
    assert completed.cost_usd == pytest.approx(3 * CALL_COST) == report.cost_usd
    assert completed.duration_ms == report.duration_ms

    llm_calls = [e for e in activity_log if e["event"] == "llm_call"]
    tool_calls = [e for e in activity_log if e["event"] == "tool_call"]
    assert [e["iteration"] for e in llm_calls] == [1, 2, 3]
    assert all(e["cost_usd"] == pytest.approx(CALL_COST) for e in llm_calls)
    assert all(e["model"] == "anthropic:claude-sonnet-4-6" for e in llm_calls)
    assert all({"input_tokens", "output_tokens", "duration_ms"} <= e.keys() for e in llm_calls)
    assert [(e["tool"], e["outcome"]) for e in tool_calls] == [
        ("list_files", "ok"),
        ("write_file", "ok"),
    ]


async def test_a_worker_replaced_mid_turn_counts_no_cost_twice(
    client: Client,
    fake_anthropic: FakeAnthropic,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="temporalio.workflow")
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    key = script(fake_anthropic)

    async with running_worker(client, settings, fake_anthropic):
        handle = await start(client, settings.task_queue, key)
        [pending] = (await wait_for_pending(handle)).pending
    # The first worker is gone; a new one (with an empty cache) takes over the turn.
    async with running_worker(client, settings, fake_anthropic):
        await handle.signal(SIGNAL_APPROVE, {"call_id": pending.call_id, "approved": True})
        report = await handle.result()

    assert report.llm_calls == 3
    assert report.cost_usd == pytest.approx(3 * CALL_COST)
    assert len(fake_anthropic.requests_for(key)) == 3
    assert (settings.workspace / "a.md").read_text() == "x"
    names = [name for name, _ in workflow_events(caplog)]
    assert names.count("turn_started") == 1
    assert names.count("turn_completed") == 1
