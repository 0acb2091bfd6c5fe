"""`agent.guardrails` on a real server with the scripted fake model: each stage (the task input,
a tool result read from the workspace, the final answer) under each verdict (pass, redact,
block) in each mode (enforce, log_only), the built-in `secrets` and `size_cap`, and the bad
input (a guardrail the worker lacks, an unknown mode) refused before any model call."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from turnkeeper.activities.guardrails.guardrails import Guardrails
from turnkeeper.contracts.guardrails import GuardrailDecision

import turnkeeper
from tests.conftest import (
    TurnRunner,
    failure_of,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from turnkeeper.worker.wiring import worker_guardrails

SIZE_CAP = 300  # the test worker's TURNKEEPER_GUARDRAIL_MAX_CHARS
AWS_KEY = "AKIA" + "Q" * 16


@turnkeeper.guardrail
def mask_names(text: str) -> turnkeeper.Redact | None:
    if "Alice" in text:
        return turnkeeper.Redact(text.replace("Alice", "[name]"), "a name")
    return None


@turnkeeper.guardrail
async def no_forbidden(text: str, stage: str, tool: str | None) -> turnkeeper.Block | None:
    if "FORBIDDEN" in text:
        return turnkeeper.Block(f"forbidden word in the {stage}{f' of {tool}' if tool else ''}")
    return None


@pytest.fixture
async def turns(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> AsyncIterator[TurnRunner]:
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    settings = dataclasses.replace(settings, guardrail_max_chars=SIZE_CAP)
    guardrails: Guardrails = worker_guardrails(settings, [mask_names, no_forbidden])
    async with running_worker(client, settings, fake_anthropic, guardrails=guardrails):
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic)


def guarded(key: str, guardrails: list[Any], task_input: str) -> dict[str, Any]:
    return scripted_request(
        key,
        agent={"guardrails": guardrails, "tools": ["read_file"]},
        task={"input": task_input},
    )


def verdicts(decisions: list[GuardrailDecision]) -> list[tuple[str, str, str, bool]]:
    return [(d.stage, d.guardrail, d.verdict, d.enforced) for d in decisions]


def sent_text(turns: TurnRunner, key: str, call: int) -> str:
    return json.dumps(turns.fake.requests_for(key)[call].body["messages"])


async def test_enforced_redactions_change_what_the_model_and_the_caller_read(
    turns: TurnRunner,
) -> None:
    key = new_key()
    (turns.workspace / "notes.txt").write_text("Alice wrote these notes.")
    turns.fake.script(
        key,
        [
            fake.tool_calls(("read_file", {"path": "notes.txt"})),
            fake.text("Alice wrote the notes."),
        ],
    )

    handle = await turns.start(guarded(key, ["mask_names", "no_forbidden"], "Read Alice's notes"))
    report = await handle.result()

    assert report.outcome == "completed"
    assert report.output == "[name] wrote the notes."
    first, second = sent_text(turns, key, 0), sent_text(turns, key, 1)
    assert "Alice" not in first and "Read [name]'s notes" in first
    assert "Alice" not in second and "[name] wrote these notes." in second
    assert verdicts(report.guardrail_decisions) == [
        ("input", "mask_names", "redact", True),
        ("input", "no_forbidden", "pass", True),
        ("tool_result", "mask_names", "redact", True),
        ("tool_result", "no_forbidden", "pass", True),
        ("answer", "mask_names", "redact", True),
        ("answer", "no_forbidden", "pass", True),
    ]
    tool_use_id = turns.fake.requests_for(key)[1].body["messages"][-1]["content"][0]["tool_use_id"]
    assert report.guardrail_decisions[2].call_id == tool_use_id
    # The same verdicts on every channel: the status query and the event stream.
    status = await handle.query("status")
    assert [d["verdict"] for d in status["guardrail_decisions"]] == [
        d.verdict for d in report.guardrail_decisions
    ]
    events = [e async for e in turnkeeper.turn(turns.client, handle.id).events()]
    shown = [
        (e.stage, e.guardrail, e.verdict, e.enforced)
        for e in events
        if e.kind == "guardrail_decision"
    ]
    assert shown == verdicts(report.guardrail_decisions)


async def test_log_only_records_every_verdict_and_changes_nothing(turns: TurnRunner) -> None:
    key = new_key()
    (turns.workspace / "notes.txt").write_text("Alice: FORBIDDEN")
    turns.fake.script(
        key,
        [
            fake.tool_calls(("read_file", {"path": "notes.txt"})),
            fake.text("Alice said FORBIDDEN."),
        ],
    )
    log_only = [{"name": n, "mode": "log_only"} for n in ("mask_names", "no_forbidden")]

    report = await turns.run(guarded(key, log_only, "Read Alice's FORBIDDEN notes"))

    assert (report.outcome, report.output) == ("completed", "Alice said FORBIDDEN.")
    assert "Read Alice's FORBIDDEN notes" in sent_text(turns, key, 0)
    assert "Alice: FORBIDDEN" in sent_text(turns, key, 1)
    assert verdicts(report.guardrail_decisions) == [
        (stage, name, verdict, False)
        for stage in ("input", "tool_result", "answer")
        for name, verdict in (("mask_names", "redact"), ("no_forbidden", "block"))
    ]
    assert report.guardrail_decisions[1].reason == "forbidden word in the input"


async def test_a_blocked_tool_result_reaches_the_model_as_an_error_and_the_turn_goes_on(
    turns: TurnRunner,
) -> None:
    key = new_key()
    (turns.workspace / "a.txt").write_text("FORBIDDEN plans")
    (turns.workspace / "b.txt").write_text(f"key {AWS_KEY} and Alice")
    (turns.workspace / "c.txt").write_text("x" * (SIZE_CAP + 1))
    reads = [("read_file", {"path": name}) for name in ("a.txt", "b.txt", "c.txt")]
    turns.fake.script(key, [fake.tool_calls(*reads), fake.text("Done.")])
    guardrails = ["secrets", "size_cap", {"name": "mask_names", "mode": "log_only"}, "no_forbidden"]

    report = await turns.run(guarded(key, guardrails, "Read the three files"))

    assert report.outcome == "completed"
    results = turns.fake.requests_for(key)[1].body["messages"][-1]["content"]
    texts = [json.dumps(r["content"]) for r in results]
    assert results[0]["is_error"] and "blocked by the guardrail 'no_forbidden'" in texts[0]
    assert "forbidden word in the tool_result of read_file" in texts[0]
    assert AWS_KEY not in texts[1] and "[redacted]" in texts[1] and "Alice" in texts[1]
    assert results[2]["is_error"] and "blocked by the guardrail 'size_cap'" in texts[2]
    by_call = [
        (d.guardrail, d.verdict, d.enforced)
        for d in report.guardrail_decisions
        if d.stage == "tool_result" and d.verdict != "pass"
    ]
    assert by_call == [
        ("no_forbidden", "block", True),
        ("secrets", "redact", True),
        ("mask_names", "redact", False),
        ("size_cap", "block", True),  # the chain stopped there: no later verdict on c.txt
    ]


async def test_a_blocked_input_fails_the_turn_before_any_model_call(turns: TurnRunner) -> None:
    key = new_key()

    error, report = await failure_of(
        turns, guarded(key, ["mask_names", "no_forbidden"], "Do the FORBIDDEN thing")
    )

    assert error.type == "GuardrailBlocked"
    assert "'no_forbidden' blocked the task input: forbidden word in the input" in error.message
    assert turns.fake.requests_for(key) == []
    assert verdicts(report.guardrail_decisions) == [
        ("input", "mask_names", "pass", True),
        ("input", "no_forbidden", "block", True),
    ]


async def test_a_blocked_answer_fails_the_turn_with_its_partial_report(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("The FORBIDDEN answer.")])

    handle = await turnkeeper.start_turn(
        turns.client,
        guarded(key, ["no_forbidden"], "Answer"),
        task_queue=turns.task_queue,
    )

    with pytest.raises(turnkeeper.GuardrailBlocked) as failure:
        await handle.result()
    assert "blocked the final answer" in failure.value.message
    report = failure.value.report
    assert report is not None and report.llm_calls == 1
    assert "FORBIDDEN" not in report.output and "withheld" in report.output
    assert "FORBIDDEN" not in json.dumps([m.model_dump(mode="json") for m in report.messages])
    assert verdicts(report.guardrail_decisions)[-1] == ("answer", "no_forbidden", "block", True)


@pytest.mark.parametrize(
    ("guardrails", "problem"),
    [
        (["mask_names", "no_pii"], "no guardrail named 'no_pii'"),
        ([{"name": "mask_names", "mode": "shadow"}], "guardrails"),
    ],
)
async def test_bad_guardrails_are_refused_before_any_model_call(
    turns: TurnRunner, guardrails: list[Any], problem: str
) -> None:
    key = new_key()

    error, report = await failure_of(turns, guarded(key, guardrails, "Read Alice's notes"))

    assert error.type == "InvalidTurnRequest"
    assert problem in error.message
    assert turns.fake.requests_for(key) == []
    assert report.guardrail_decisions == [] and report.llm_calls == 0
