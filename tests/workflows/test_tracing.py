"""The trace and the metrics of one turn with two tool calls and an approval, on a worker with
Temporal's OpenTelemetry plugin that replays the turn from the start on every workflow task
(`max_cached_workflows=0`), so a span or metric recorded again on replay would show up twice.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.opentelemetry import OpenTelemetryPlugin
from turnkeeper.contracts.errors import MAX_ITERATIONS_EXCEEDED
from turnkeeper.contracts.names import QUERY_STATUS, SIGNAL_APPROVE, WORKFLOW_TYPE
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import (
    TurnRunner,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
    wait_for_pending,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.telemetry_capture import MetricGrowth, capture

MODEL = "anthropic:claude-sonnet-4-6"
FIRST = {"input_tokens": 120, "output_tokens": 40}
SECOND = {"input_tokens": 200, "output_tokens": 10, "cache_read_input_tokens": 50}
READ = ("read_file", {"path": "notes.md"})
WRITE = ("write_file", {"path": "summary.md", "content": "The notes say hello."})


@dataclass(frozen=True)
class TracedTurn:
    report: AgentReport
    workflow_id: str
    workflow_tasks: int  # each replayed the turn from its start (no workflow cache)
    spans: list[ReadableSpan]
    metrics: MetricGrowth

    def of_kind(self, kind: str) -> list[ReadableSpan]:
        return [
            s for s in self.spans if (s.attributes or {}).get("openinference.span.kind") == kind
        ]


@pytest.fixture(scope="module")
async def traced_turn(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory
) -> TracedTurn:
    """One turn: read_file and write_file in one response, write_file approved by alice."""
    telemetry = capture()
    settings = make_settings(tmp_path_factory.mktemp("traced"), f"tq-{uuid.uuid4()}")
    Path(settings.workspace, "notes.md").write_text("hello")
    key = new_key()
    fake_anthropic.script(
        key, [fake.tool_calls(READ, WRITE, usage=FIRST), fake.text("Saved.", usage=SECOND)]
    )
    workflow_id = f"turn-traced-{key}"
    telemetry.clear_spans()
    before = telemetry.metrics()
    async with running_worker(
        client,
        settings,
        fake_anthropic,
        plugins=[OpenTelemetryPlugin()],
        max_cached_workflows=0,
    ):
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            scripted_request(key),
            id=workflow_id,
            task_queue=settings.task_queue,
            result_type=AgentReport,
        )
        [pending] = (await wait_for_pending(handle)).pending
        await handle.signal(
            SIGNAL_APPROVE, {"call_id": pending.call_id, "approved": True, "approver": "alice"}
        )
        report = await handle.result()
        # A query on the finished turn replays its whole history once more.
        await handle.query(QUERY_STATUS, result_type=TurnStatus)
        history = await handle.fetch_history()
    tasks = sum(
        e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED for e in history.events
    )
    spans, grew = telemetry.spans(), telemetry.growth_since(before)
    return TracedTurn(report, workflow_id, tasks, spans, grew)


async def test_one_llm_span_per_model_call_despite_replays(traced_turn: TracedTurn) -> None:
    assert traced_turn.report.outcome == "completed"
    assert traced_turn.workflow_tasks >= 4  # start, tool results, approval, final answer
    spans = traced_turn.of_kind("LLM")
    assert len(spans) == 2
    assert len({s.context.span_id for s in traced_turn.spans}) == len(traced_turn.spans)
    for span, usage, stop in zip(spans, (FIRST, SECOND), ("tool_use", "end_turn"), strict=True):
        attributes = dict(span.attributes or {})
        prompt = usage["input_tokens"] + usage.get("cache_read_input_tokens", 0)
        assert span.name == "model_call claude-sonnet-4-6"
        assert attributes["llm.provider"] == "anthropic"
        assert attributes["llm.model_name"] == "claude-sonnet-4-6"
        assert attributes["llm.token_count.prompt"] == prompt
        assert attributes["llm.token_count.completion"] == usage["output_tokens"]
        assert attributes["llm.token_count.total"] == prompt + usage["output_tokens"]
        assert attributes["llm.finish_reason"] == stop
        assert attributes["turnkeeper.turn_id"] == traced_turn.workflow_id
        assert not [key for key in attributes if key.startswith("llm.input_messages")]
    total_cost = sum(float((s.attributes or {})["llm.cost.total"]) for s in spans)
    assert total_cost == pytest.approx(traced_turn.report.cost_usd)


async def test_model_metrics_and_the_turn_outcome_are_counted_once(
    traced_turn: TracedTurn,
) -> None:
    grew, report = traced_turn.metrics, traced_turn.report
    assert grew.value("turnkeeper.model_calls", model=MODEL, outcome="ok") == 2
    assert grew.value("turnkeeper.tokens", model=MODEL, token_type="input") == 320
    assert grew.value("turnkeeper.tokens", model=MODEL, token_type="output") == 50
    assert grew.value("turnkeeper.tokens", model=MODEL, token_type="cache_read") == 50
    assert grew.value("turnkeeper.cost", model=MODEL) == pytest.approx(report.cost_usd)
    assert grew.value("turnkeeper.turns", outcome="completed", agent_id="test-agent") == 1
    assert grew.value("turnkeeper.turns") == 1
    assert grew.count("turnkeeper.turn.duration", outcome="completed") == 1


async def test_one_tool_span_per_tool_call(traced_turn: TracedTurn) -> None:
    spans = sorted(traced_turn.of_kind("TOOL"), key=lambda s: s.name)
    assert [s.name for s in spans] == ["tool_call read_file", "tool_call write_file"]
    for span, (name, arguments) in zip(spans, (READ, WRITE), strict=True):
        attributes = dict(span.attributes or {})
        assert attributes["tool.name"] == name
        assert json.loads(str(attributes["input.value"])) == arguments
        assert attributes["turnkeeper.outcome"] == "ok"
    grew = traced_turn.metrics
    assert grew.value("turnkeeper.tool_calls", tool="read_file", outcome="ok") == 1
    assert grew.value("turnkeeper.tool_calls", tool="write_file", outcome="ok") == 1


async def test_the_approval_wait_is_measured_once(traced_turn: TracedTurn) -> None:
    grew = traced_turn.metrics
    assert grew.count("turnkeeper.approval.wait", tool="write_file", approved=True) == 1
    assert grew.total("turnkeeper.approval.wait", tool="write_file") > 0


async def test_one_turn_span_parents_every_call(traced_turn: TracedTurn) -> None:
    [turn] = traced_turn.of_kind("AGENT")
    attributes = dict(turn.attributes or {})
    assert turn.name == "turn test-agent"
    assert turn.parent is None
    assert attributes["agent.name"] == "test-agent"
    assert attributes["session.id"] == traced_turn.report.task_id
    assert attributes["turnkeeper.workflow_id"] == traced_turn.workflow_id
    assert attributes["turnkeeper.outcome"] == "completed"
    assert (attributes["turnkeeper.llm_calls"], attributes["turnkeeper.tool_calls"]) == (2, 2)
    assert turn.end_time is not None and turn.start_time is not None
    assert turn.end_time > turn.start_time  # a real duration, not a zero-length marker
    ours = [s for s in traced_turn.spans if s is not turn and _is_ours(s)]
    kinds = Counter((s.attributes or {}).get("openinference.span.kind") for s in ours)
    assert kinds == Counter({"LLM": 2, "TOOL": 2})
    for span in ours:
        assert span.parent is not None
        assert span.parent.span_id == turn.context.span_id
    # The anthropic SDK's own HTTP-call spans nest under the model-call spans, in the same trace.
    assert {s.context.trace_id for s in traced_turn.spans} == {turn.context.trace_id}


def _is_ours(span: ReadableSpan) -> bool:
    scope = span.instrumentation_scope
    return scope is not None and scope.name.startswith("turnkeeper.")


async def test_a_failed_turn_is_counted_under_its_error_type(turns: TurnRunner) -> None:
    telemetry = capture()
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(("list_files", {"path": "."}))] * 2)
    before = telemetry.metrics()

    handle = await turns.start(scripted_request(key, agent={"id": "metered", "max_iterations": 2}))
    with pytest.raises(WorkflowFailureError):
        await handle.result()
    # Replaying the failed turn records nothing again.
    await handle.query(QUERY_STATUS, result_type=TurnStatus)

    grew = telemetry.growth_since(before)
    labels = {"outcome": "failed", "agent_id": "metered", "error_type": MAX_ITERATIONS_EXCEEDED}
    assert grew.value("turnkeeper.turns", **labels) == 1
    assert grew.count("turnkeeper.turn.duration", **labels) == 1
    assert grew.value("turnkeeper.turns", agent_id="metered") == 1
