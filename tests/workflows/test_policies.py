"""`agent.policy` on a worker with `TURNKEEPER_POLICY_FILE`: the same scripted calls enforced
and in log_only, an approver's edit checked again, and a turn without the switch untouched."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.contrib.opentelemetry import OpenTelemetryPlugin
from turnkeeper.activities.policies.policy_set import CedarPolicies
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import QUERY_STATUS, SIGNAL_APPROVE
from turnkeeper.contracts.policies import PolicyDecision
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import (
    TurnRunner,
    failure_of,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
    wait_for_pending,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.policy_files import write_policies
from tests.support.telemetry_capture import capture
from turnkeeper.client.events import turn_events
from turnkeeper.console.policy_calls import past_turns
from turnkeeper.console.policy_command import change_line

CALLS = (
    ("read_file", {"path": "secret.env"}),
    ("read_file", {"path": "notes.md"}),
    ("list_files", {"path": "."}),
)


@pytest.fixture
async def policy_turns(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> AsyncIterator[TurnRunner]:
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    settings = dataclasses.replace(settings, policy_files=(write_policies(tmp_path),))
    (settings.workspace / "notes.md").write_text("the notes")
    async with running_worker(client, settings, fake_anthropic):
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic)


def _request(key: str, mode: str | None) -> dict[str, Any]:
    agent = {"policy": {"mode": mode}} if mode else {}
    # One by one, so that the decisions are recorded in call order.
    return scripted_request(key, agent={**agent, "parallel_tool_calls": False})


def _results(report: AgentReport) -> list[ToolResultBlock]:
    return [b for b in report.messages[2].content if isinstance(b, ToolResultBlock)]


def _effects(decisions: list[PolicyDecision]) -> list[tuple[str, str, list[str], bool]]:
    return [(d.tool, d.effect, d.policies, d.enforced) for d in decisions]


async def test_enforced_policies_forbid_ask_and_check_an_edit_again(
    policy_turns: TurnRunner,
) -> None:
    key = new_key()
    policy_turns.fake.script(key, [fake.tool_calls(*CALLS), fake.text("Done.")])
    handle = await policy_turns.start(_request(key, "enforce"))

    # list_files needs no approval, but the policy asks for one.
    [pending] = (await wait_for_pending(handle)).pending
    assert pending.tool == "list_files"
    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert [d.effect for d in status.policy_decisions] == ["forbid", "permit", "ask"]
    edit = {"path": "private/keys"}
    await handle.signal(
        SIGNAL_APPROVE,
        {"call_id": pending.call_id, "approved": True, "approver": "alice", "input": edit},
    )
    report = await handle.result()

    assert _effects(report.policy_decisions) == [
        ("read_file", "forbid", ["no-env-files"], True),
        ("read_file", "permit", ["baseline"], True),
        ("list_files", "ask", ["ask-before-listing"], True),
        ("list_files", "forbid", ["no-private-listing"], True),  # the approver's edit
    ]
    assert len({d.policy_hash for d in report.policy_decisions}) == 1
    forbidden, ran, edited = _results(report)
    assert forbidden.is_error and "'no-env-files'" in forbidden.text()
    assert not ran.is_error and "the notes" in ran.text()
    assert edited.is_error and "'no-private-listing'" in edited.text()
    assert report.tool_calls == 1  # only the permitted read ran
    # The model call's own activity decided its calls: only the edit was checked apart.
    history = await handle.fetch_history()
    markers = [e for e in history.events if e.HasField("marker_recorded_event_attributes")]
    assert len(markers) == 1
    events = [e async for e in turn_events(policy_turns.client, handle.id)]
    told = [(e.tool, e.effect, e.enforced) for e in events if e.kind == "policy_decision"]
    assert told == [(d.tool, d.effect, d.enforced) for d in report.policy_decisions]


async def test_log_only_records_the_same_decisions_and_applies_none(
    policy_turns: TurnRunner,
) -> None:
    key = new_key()
    policy_turns.fake.script(key, [fake.tool_calls(*CALLS), fake.text("Done.")])
    report = await policy_turns.run(_request(key, "log_only"))

    assert _effects(report.policy_decisions) == [
        ("read_file", "forbid", ["no-env-files"], False),
        ("read_file", "permit", ["baseline"], False),
        ("list_files", "ask", ["ask-before-listing"], False),
    ]
    assert report.decisions == []  # nobody was asked
    assert report.tool_calls == 3
    assert not any("policy" in result.text() for result in _results(report))


async def test_a_turn_without_agent_policy_is_not_checked(policy_turns: TurnRunner) -> None:
    key = new_key()
    policy_turns.fake.script(key, [fake.tool_calls(CALLS[0]), fake.text("Done.")])
    handle = await policy_turns.start(_request(key, None))
    report = await handle.result()

    assert report.policy_decisions == [] and report.tool_calls == 1
    history = await handle.fetch_history()
    assert "check_policy" not in history.to_json()
    assert "policy_decisions" not in report.model_dump_json()


@pytest.mark.parametrize("policy", [{"mode": "strict"}, {"mode": "enforce", "rules": "x"}])
async def test_an_unknown_mode_is_refused_before_any_call(
    policy_turns: TurnRunner, policy: dict[str, Any]
) -> None:
    key = new_key()
    policy_turns.fake.script(key, [fake.tool_calls(CALLS[1]), fake.text("never")])
    request = scripted_request(key, agent={"policy": policy})

    error, report = await failure_of(policy_turns, request)

    assert error.type == "InvalidTurnRequest"
    assert "agent.policy" in error.message, error.message
    assert policy_turns.fake.requests_for(key) == []
    assert report.policy_decisions == [] and report.tool_calls == 0


async def test_the_what_if_reads_both_turns_back_through_the_client(
    policy_turns: TurnRunner,
) -> None:
    """`turnkeeper policy test`'s reading, on the suite's client: in CI's encrypted pass the
    histories are encrypted, and the reading decrypts them as the command does."""
    ids = []
    for mode in ("enforce", "log_only"):
        key = new_key()
        policy_turns.fake.script(key, [fake.tool_calls(*CALLS), fake.text("Done.")])
        handle = await policy_turns.start(_request(key, mode))
        if mode == "enforce":
            [pending] = (await wait_for_pending(handle)).pending
            await handle.signal(SIGNAL_APPROVE, {"call_id": pending.call_id, "approved": True})
        await handle.result()
        ids.append(handle.id)
    policies = CedarPolicies.read(list(policy_turns.settings.policy_files))

    read = [turn async for turn in past_turns(policy_turns.client, [*ids, "no-such"], None, None)]

    enforced, logged, missing = read
    assert [call.happened for call in enforced.calls] == ["forbid", "permit", "ask"]
    assert [call.happened for call in logged.calls] == ["permit", "permit", "permit"]
    assert [change_line(policies, call) for call in enforced.calls] == [None, None, None]
    changes = [change_line(policies, call) for call in logged.calls]
    assert changes[0] is not None and "ran → forbidden (by no-env-files)" in changes[0]
    assert changes[1] is None
    assert changes[2] is not None and "ran → asked (by ask-before-listing)" in changes[2]
    assert missing.problem == "no such workflow"


async def test_the_turn_span_lists_every_decision(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    telemetry = capture()
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    settings = dataclasses.replace(settings, policy_files=(write_policies(tmp_path),))
    key = new_key()
    fake_anthropic.script(key, [fake.tool_calls(CALLS[0], CALLS[1]), fake.text("Done.")])
    telemetry.clear_spans()
    async with running_worker(client, settings, fake_anthropic, plugins=[OpenTelemetryPlugin()]):
        runner = TurnRunner(client, settings.task_queue, settings, fake_anthropic)
        report = await runner.run(_request(key, "log_only"))

    [first, second] = report.policy_decisions
    spans = [s for s in telemetry.spans() if "turnkeeper.policy_decisions" in (s.attributes or {})]
    [span] = spans
    assert list((span.attributes or {})["turnkeeper.policy_decisions"]) == [
        f"{first.call_id} read_file forbid log_only",
        f"{second.call_id} read_file permit log_only",
    ]
