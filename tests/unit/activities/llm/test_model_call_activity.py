"""The model-call activity as its steps run together, with the demo provider and a store in a
local folder (no server): what it returns, what it tells the workflow of the worker's tools and
the turn record's line it logs."""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.llm.model_call_activity import ModelCallActivities
from turnkeeper.activities.llm.rate_gate import RateGate
from turnkeeper.activities.providers.demo_provider import DemoProvider
from turnkeeper.activities.providers.provider import ModelRequest, ModelResponse, TextSink
from turnkeeper.activities.tools.registry import ToolRegistry
from turnkeeper.activities.tools.workspace import Workspace, builtin_tools
from turnkeeper.contracts.activity_io import CallContext, ModelCallResult

from tests.unit.activities.llm.steps import call, conversations

WORKSPACE_TOOLS = ["list_files", "read_file", "write_file"]


def activities(folder: Path) -> tuple[ModelCallActivities, ToolRegistry]:
    tools = builtin_tools(Workspace(folder / "workspace"))
    return ModelCallActivities({"demo": DemoProvider()}, conversations(folder), tools), tools


async def model_call(folder: Path, **fields: object) -> ModelCallResult:
    model_calls, _ = activities(folder)
    first = call(context=CallContext(system_prompt="Be brief."), **fields)
    return await ActivityEnvironment().run(model_calls.model_call, first)


async def test_the_answer_comes_back_with_the_reference_of_the_conversation_it_ends(
    tmp_path: Path,
) -> None:
    result = await model_call(tmp_path, offered_tools=WORKSPACE_TOOLS)

    assert result.stop_reason == "tool_use"
    assert result.message.tool_uses()[0].name == "list_files"
    stored = await conversations(tmp_path).load(result.conversation_ref)
    assert stored.messages[-1] == result.message
    assert stored.context == CallContext(system_prompt="Be brief.")
    assert result.cost_usd == 0.0
    assert result.usage.input_tokens > 0


async def test_the_call_that_asks_learns_the_traits_of_the_offered_worker_tools(
    tmp_path: Path,
) -> None:
    result = await model_call(tmp_path, offered_tools=WORKSPACE_TOOLS, want_tool_traits=True)

    assert [traits.name for traits in result.tool_traits] == WORKSPACE_TOOLS
    assert result.approval_required == ["write_file"]


async def test_the_other_calls_of_the_turn_carry_nothing_of_the_worker_s_tools(
    tmp_path: Path,
) -> None:
    result = await model_call(tmp_path, offered_tools=WORKSPACE_TOOLS)

    assert result.tool_traits == []
    assert result.approval_required == []
    assert "approval_required" not in result.model_dump()


async def test_a_turn_id_left_out_of_the_input_is_read_from_the_activity_s_info(
    tmp_path: Path,
) -> None:
    with capture_logs() as logs:
        await model_call(tmp_path, turn_id="")

    (line,) = [entry for entry in logs if entry["event"] == "llm_call"]
    assert line["turn_id"] == ActivityEnvironment().info.workflow_id


async def test_each_call_logs_one_turn_record_line_of_counts_and_no_content(
    tmp_path: Path,
) -> None:
    with capture_logs() as logs:
        result = await model_call(tmp_path, iteration=4, skipped=["anthropic:x: cooling down"])

    (line,) = [entry for entry in logs if entry["event"] == "llm_call"]
    assert line == {
        "event": "llm_call",
        "log_level": "info",
        "turn_id": "turn-1",
        "iteration": 4,
        "model": "demo:workspace-summarizer",
        "input_tokens": result.usage.input_tokens,
        "output_tokens": result.usage.output_tokens,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "skipped": ["anthropic:x: cooling down"],
        "cost_usd": 0.0,
        "priced_by": "price_table",  # the demo model's price is $0 in the table
        "duration_ms": result.duration_ms,
        "stop_reason": "end_turn",
    }


class SpentKeyProvider(DemoProvider):
    """The demo model, its answer saying (as its headers would) that the key's limit is spent."""

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        response = await super().complete(request, on_text)
        response.rate_limited_s = 12.0
        return response


class RecordingGate(RateGate):
    """A gate with no limit to wait for, that records the back-offs it is told of."""

    def __init__(self) -> None:
        super().__init__(None, {})
        self.back_offs: list[tuple[str, float]] = []

    async def back_off(self, model: str, seconds: float) -> None:
        self.back_offs.append((model, seconds))


async def test_an_answer_that_spent_the_key_s_limit_backs_the_fleet_off(tmp_path: Path) -> None:
    tools = builtin_tools(Workspace(tmp_path / "workspace"))
    gate = RecordingGate()
    model_calls = ModelCallActivities(
        {"demo": SpentKeyProvider()}, conversations(tmp_path), tools, rate_gate=gate
    )
    result = await ActivityEnvironment().run(
        model_calls.model_call, call(context=CallContext(system_prompt="Be brief."))
    )

    assert result.stop_reason in ("tool_use", "end_turn")
    assert gate.back_offs == [("demo:workspace-summarizer", 12.0)]


async def test_an_answer_with_room_left_backs_nothing_off(tmp_path: Path) -> None:
    tools = builtin_tools(Workspace(tmp_path / "workspace"))
    gate = RecordingGate()
    model_calls = ModelCallActivities(
        {"demo": DemoProvider()}, conversations(tmp_path), tools, rate_gate=gate
    )
    await ActivityEnvironment().run(
        model_calls.model_call, call(context=CallContext(system_prompt="Be brief."))
    )

    assert gate.back_offs == []
