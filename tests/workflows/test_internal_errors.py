"""Our own defects are not outages: an activity that fails with a bug of ours fails the turn at
once with TurnInternalError and its partial report, where it used to be retried six times over
a minute and reported as LLMUnavailable. Provider errors keep their ladder (test_model_errors)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

import turnkeeper
from tests.conftest import (
    TurnRunner,
    failure_of,
    failure_of_turn,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from turnkeeper.payloads.content_store import LocalFolderStore


async def test_a_token_count_without_input_tokens_is_a_turn_internal_error(
    turns: TurnRunner,
) -> None:
    # The case: a count_tokens reply lacking `input_tokens` made the budget check
    # multiply None by a price, a TypeError of ours.
    key = new_key()
    turns.fake.script(key, [fake.text("never reached")])
    turns.fake.script_count_tokens(key, fake.RawReply(200, b"{}"))
    request = scripted_request(key, task={"constraints": {"cost_budget_usd": 1.0}})

    error, partial = await failure_of(turns, request)

    assert error.type == "TurnInternalError"
    assert "model_call activity: TypeError" in error.message
    assert (partial.outcome, partial.llm_calls, len(partial.messages)) == ("failed", 0, 1)
    counts = [r for r in turns.fake.requests if r.script_key == key and r.path.endswith("tokens")]
    assert len(counts) == 1  # failed once, never retried
    assert turns.fake.requests_for(key) == []  # and nothing was billed


async def test_the_public_client_raises_turn_internal_error(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("never reached")])
    turns.fake.script_count_tokens(key, fake.RawReply(200, b'{"input_tokens": "many"}'))
    handle = await turnkeeper.start_turn(
        turns.client,
        scripted_request(key, task={"constraints": {"cost_budget_usd": 1.0}}),
        id=f"turn-{key}",
        task_queue=turns.task_queue,
    )
    try:
        await handle.result()
    except turnkeeper.TurnInternalError as failure:
        assert failure.report is not None and failure.report.outcome == "failed"
    else:
        raise AssertionError("the turn completed")


class _DefectStoringToolResults(LocalFolderStore):
    """A content store with a bug of ours in one path: storing a tool's result."""

    defects = 0

    async def put(self, data: bytes) -> str:
        if b'"tool_result"' in data:
            self.defects += 1
            raise TypeError("'NoneType' object is not subscriptable")
        return await super().put(data)


async def test_a_defect_in_the_tool_activity_fails_the_turn_once(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    (settings.workspace / "notes.md").write_text("notes")
    key = new_key()
    fake_anthropic.script(
        key, [fake.tool_calls(("read_file", {"path": "notes.md"})), fake.text("never reached")]
    )
    store = _DefectStoringToolResults(tmp_path / "store")
    async with running_worker(client, settings, fake_anthropic, store=store):
        runner = TurnRunner(client, settings.task_queue, settings, fake_anthropic)
        error, partial = await failure_of(runner, scripted_request(key))

    assert error.type == "TurnInternalError"
    assert "tool_call activity: TypeError" in error.message
    assert (partial.outcome, partial.llm_calls) == ("failed", 1)
    assert store.defects == 1  # an idempotent tool's call, yet not retried: the defect repeats
    assert len(fake_anthropic.requests_for(key)) == 1


async def test_a_defect_before_the_loop_ends_the_turn_instead_of_hanging_it(
    turns: TurnRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before the loop (validating, resuming, the first record) an exception of ours used to fail
    # workflow tasks forever: the turn showed Running and its status query timed out.
    from turnkeeper.workflows.turn_state import Turn

    def broken_begin(*args: object, **kwargs: object) -> Turn:
        raise RuntimeError("a defect while beginning")

    monkeypatch.setattr(Turn, "begin", broken_begin)
    key = new_key()
    handle = await turns.start(scripted_request(key))

    error, partial = await failure_of_turn(handle)

    assert error.type == "TurnInternalError"
    assert "before the turn began: RuntimeError: a defect while beginning" in error.message
    assert (partial.agent_id, partial.task_id, partial.outcome) == (
        "test-agent",
        f"task-{key}",
        "failed",
    )
    status = await handle.query("status")
    assert status["state"] == "failed"
    assert turns.fake.requests_for(key) == []
