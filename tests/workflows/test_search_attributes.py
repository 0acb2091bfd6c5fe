"""Search attributes of a turn: what the Web UI's list and visibility queries see. Counters are
upserted with every change of state and at most every `COUNTER_REFRESH` in between (each upsert
is a history event, a visibility write and a billed action on Temporal Cloud)."""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType
from turnkeeper.contracts.search_attributes import (
    COST_USD_KEY,
    LLM_CALLS_KEY,
    TOOL_CALLS_KEY,
    TURN_STATE,
)
from turnkeeper.workflows.observation.turn_view import COUNTER_REFRESH

from tests.conftest import TurnRunner, new_key, scripted_request, wait_for_pending
from tests.fakes import fake_anthropic as fake


def _upserted_names(events: list) -> list[set[str]]:  # type: ignore[type-arg]
    return [
        set(
            event.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
        )
        for event in events
        if event.event_type == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
    ]


async def test_a_quick_turn_upserts_at_its_start_and_end_only(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("list_files", {"path": "."})),
            fake.tool_calls(("list_files", {"path": "."})),
            fake.text("done"),
        ],
    )

    handle = await turns.start(scripted_request(key))
    report = await handle.result()

    events = [event async for event in handle.fetch_history_events()]
    counters = {"TurnState", "LlmCalls", "ToolCalls", "CostUsd"}
    # Running (with the ids the client did not set), then completed: no upsert per model call,
    # and one upsert per step.
    assert _upserted_names(events) == [counters | {"AgentId", "TaskId"}, counters]
    attributes = (await handle.describe()).typed_search_attributes
    assert attributes.get(TURN_STATE) == "completed"
    assert attributes.get(LLM_CALLS_KEY) == report.llm_calls == 3
    assert attributes.get(TOOL_CALLS_KEY) == report.tool_calls == 2
    assert attributes.get(COST_USD_KEY) == round(report.cost_usd, 6)
    assert COUNTER_REFRESH.total_seconds() >= 5  # a quick turn is well under it


async def test_waiting_for_a_human_brings_the_counters_up_to_date(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [fake.tool_calls(("write_file", {"path": "a.md", "content": "x"})), fake.text("ok")],
    )

    handle = await turns.start(scripted_request(key))
    await wait_for_pending(handle)

    attributes = (await handle.describe()).typed_search_attributes
    assert attributes.get(TURN_STATE) == "awaiting_approval"
    assert attributes.get(LLM_CALLS_KEY) == 1
    assert (attributes.get(COST_USD_KEY) or 0) > 0
    await handle.terminate()
