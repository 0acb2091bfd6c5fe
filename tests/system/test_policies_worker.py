"""Cedar policies in `python worker.py` with `TURNKEEPER_POLICY_FILE`: an enforced turn and a
log-only turn of the same scripted model, `turnkeeper policy test` over both, and the policy file
edited while a turn waits (a good edit applies to its next call, a bad one changes nothing).

One worker serves both tests (the suite's budget allows two tests that start processes)."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.policy_files import NO_SEARCHES, POLICIES, write_policies
from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.steps import result, start, turn_request, update, wait_for_pending

CALLS = (
    ("read_file", {"path": "secret.env"}),
    ("read_file", {"path": "notes.md"}),
    ("list_files", {"path": "."}),
)
SEARCH = ("search_files", {"pattern": "notes"})
LIST = ("list_files", {"path": "."})


@dataclass
class PolicyWorker:
    stack: SystemStack
    worker: WorkerProcess
    policy_file: Path


@pytest.fixture(scope="module")
async def served(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[PolicyWorker]:
    folder = tmp_path_factory.mktemp("policies")
    stack = SystemStack(client, fake_anthropic, folder)
    policy_file = write_policies(folder)
    worker = await stack.start_worker(env={"TURNKEEPER_POLICY_FILE": str(policy_file)})
    worker.allowed_errors.append("policy_reload_failed")  # the bad edit below, on purpose
    (worker.workspace / "notes.md").write_text("the notes")
    try:
        yield PolicyWorker(stack, worker, policy_file)
    finally:
        worker.stop()
    assert worker.problems() == [], "\n".join(worker.problems())


def _request(key: str, mode: str) -> dict[str, Any]:
    request = turn_request(key)
    request["agent"].update(policy={"mode": mode}, parallel_tool_calls=False)
    return request


async def _approve_waiting(served: PolicyWorker, workflow_id: str) -> None:
    [call] = (await wait_for_pending(served.stack, workflow_id, 1))["pending"]
    decision = {"call_id": call["call_id"], "approved": True, "approver": "alice"}
    await update(served.stack, workflow_id, "decide", decision)


def _effects(report: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [(d["tool"], d["effect"], d["enforced"]) for d in report["policy_decisions"]]


async def test_enforced_and_log_only_turns_and_what_if_over_both(served: PolicyWorker) -> None:
    stack, worker = served.stack, served.worker
    enforced_key, logged_key = new_key(), new_key()
    for key in (enforced_key, logged_key):
        stack.fake.script(key, [fake.tool_calls(*CALLS), fake.text("Done.")])
    enforced = await start(stack, worker, _request(enforced_key, "enforce"))
    logged = await start(stack, worker, _request(logged_key, "log_only"))
    await _approve_waiting(served, enforced)  # the policy's ask on list_files
    enforced_report, logged_report = await result(stack, enforced), await result(stack, logged)

    assert _effects(enforced_report) == [
        ("read_file", "forbid", True), ("read_file", "permit", True), ("list_files", "ask", True),
    ]  # fmt: skip
    assert _effects(logged_report) == [
        ("read_file", "forbid", False), ("read_file", "permit", False),
        ("list_files", "ask", False),
    ]  # fmt: skip
    assert enforced_report["tool_calls"] == 2 and logged_report["tool_calls"] == 3
    recorded = [line for line in worker.events("policy_decision") if line["tool"] == "list_files"]
    assert {line["enforced"] for line in recorded} == {True, False}

    what_if = await stack.turnkeeper(
        "policy", "test", str(served.policy_file), "--workflow-id", enforced,
        "--workflow-id", logged, worker=worker, check=False,
    )  # fmt: skip
    assert what_if.returncode == 1, what_if.stdout + what_if.stderr
    lines = what_if.stdout.splitlines()
    assert f"{enforced}: same" in lines
    assert f"{logged}: 2 of 3 calls would change" in lines
    assert any("read_file: ran → forbidden (by no-env-files)" in line for line in lines)
    assert any("list_files: ran → asked (by ask-before-listing)" in line for line in lines)
    assert lines[-1] == "2 turns, 6 tool calls checked, 2 would change"


async def test_an_edit_applies_mid_turn_and_a_bad_edit_keeps_the_policies(
    served: PolicyWorker,
) -> None:
    stack, worker = served.stack, served.worker
    key = new_key()
    steps = [fake.tool_calls(LIST), fake.tool_calls(SEARCH, LIST), fake.tool_calls(SEARCH)]
    stack.fake.script(key, [*steps, fake.text("Done.")])
    request = _request(key, "enforce")
    request["task"]["id"] = f"task-{key}-{uuid.uuid4().hex[:6]}"
    workflow_id = await start(stack, worker, request)

    await wait_for_pending(stack, workflow_id, 1)
    _rewrite(served.policy_file, POLICIES + NO_SEARCHES)  # the turn waits: the next call sees it
    await _approve_waiting(served, workflow_id)
    await wait_for_pending(stack, workflow_id, 1)  # the second list_files, after the search
    _rewrite(served.policy_file, POLICIES + NO_SEARCHES + "forbid(principal action);\n")
    await _approve_waiting(served, workflow_id)
    report = await result(stack, workflow_id)

    decisions = report["policy_decisions"]
    assert [(d["tool"], d["effect"]) for d in decisions] == [
        ("list_files", "ask"), ("search_files", "forbid"), ("list_files", "ask"),
        ("search_files", "forbid"),
    ]  # fmt: skip
    hashes = [d["policy_hash"] for d in decisions]
    assert hashes[0] != hashes[1] == hashes[2] == hashes[3]  # the bad edit changed nothing
    assert decisions[1]["policies"] == ["no-searches"]
    assert [e for e in worker.events("policies_reloaded") if e["policy_hash"] == hashes[1]]
    [failed] = worker.events("policy_reload_failed")
    assert f"{served.policy_file}:" in failed["error"], failed


def _rewrite(path: Path, text: str) -> None:
    """Writes `text` with a later modification time, however coarse the file system's clock."""
    before = path.stat().st_mtime_ns
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before + 10**9, before + 10**9))
