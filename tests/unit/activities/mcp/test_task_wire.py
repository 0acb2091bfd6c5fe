"""Reading MCP task answers strictly, in both revisions: a task is told apart from a plain
result, and an answer that claims to be a task without being a well-formed one is refused with
what is wrong; the poll interval the turn waits is the server's, bounded."""

from __future__ import annotations

from typing import Any

import pytest
from turnkeeper.activities.mcp import task_wire as wire
from turnkeeper.contracts.mcp import McpTaskHandle
from turnkeeper.workflows.tools.mcp_tasks import MAX_POLL_S, MIN_POLL_S, poll_interval_s

TASK = {
    "taskId": "t-1",
    "status": "working",
    "createdAt": "2026-01-01T00:00:00Z",
    "lastUpdatedAt": "2026-01-01T00:00:00Z",
}


def test_a_2025_answer_with_a_task_is_a_task_and_one_without_is_a_result() -> None:
    assert wire.created_task("2025-11-25", {"task": {**TASK, "pollInterval": 500}}) is not None
    assert wire.created_task("2025-11-25", {"content": []}) is None


def test_a_2026_answer_is_a_task_only_when_its_result_type_says_so() -> None:
    assert wire.created_task("2026-07-28", {"resultType": "task", **TASK}) is not None
    assert wire.created_task("2026-07-28", {"resultType": "complete", "content": []}) is None
    assert wire.created_task("2026-07-28", {"content": []}) is None


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"resultType": "task", "status": "working"}, "has no 'taskId'"),
        ({"resultType": "task", **TASK, "taskId": ""}, "has no 'taskId'"),
        ({"resultType": "task", **TASK, "taskId": 7}, "has no 'taskId'"),
        ({"resultType": "task", **TASK, "status": "sleeping"}, "unknown status 'sleeping'"),
        ({"resultType": "task", **TASK, "pollIntervalMs": "soon"}, "not milliseconds"),
        ({"resultType": "task", **TASK, "pollIntervalMs": -5}, "not milliseconds"),
        ({"resultType": "task", **TASK, "statusMessage": 3}, "'statusMessage' that is not text"),
    ],
)
def test_a_malformed_2026_task_is_refused_saying_what_is_wrong(
    answer: dict[str, Any], problem: str
) -> None:
    with pytest.raises(wire.BadTaskAnswer, match=problem):
        wire.created_task("2026-07-28", answer)


def test_a_2025_task_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(wire.BadTaskAnswer, match="not an object"):
        wire.created_task("2025-11-25", {"task": "t-1"})


def test_a_tasks_result_must_be_a_tool_result() -> None:
    result = wire.call_result({"content": [{"type": "text", "text": "ok"}]})
    assert result.content[0].text == "ok"  # type: ignore[union-attr]
    with pytest.raises(wire.BadTaskAnswer, match="not an object"):
        wire.call_result(None)
    with pytest.raises(wire.BadTaskAnswer, match="not a tool result"):
        wire.call_result({"content": "ok"})


def test_a_failure_says_the_servers_error_or_its_status_message() -> None:
    assert wire.failure_text({"error": {"code": -1, "message": "disk full"}}) == "disk full"
    assert wire.failure_text({"statusMessage": "gave up"}) == "gave up"
    assert wire.failure_text({}) == "no reason given"


def handle(poll_interval_ms: int | None) -> McpTaskHandle:
    return McpTaskHandle(
        server="s", tool="mcp__s__t", task_id="t", protocol="2026-07-28",
        poll_interval_ms=poll_interval_ms,
    )  # fmt: skip


def test_the_poll_interval_is_the_servers_within_bounds_and_slows_with_age() -> None:
    assert poll_interval_s(handle(3000), age_s=0) == 3.0
    assert poll_interval_s(handle(10), age_s=0) == MIN_POLL_S  # a server asking for 10 ms
    assert poll_interval_s(handle(3_600_000), age_s=0) == MAX_POLL_S
    assert poll_interval_s(handle(1000), age_s=200) == 20.0  # a tenth of its age
    assert poll_interval_s(handle(None), age_s=0) == 2.0  # the server named none
