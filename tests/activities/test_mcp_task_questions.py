"""A task's questions on the activities' side, against the suite's 2026-07-28 task server: a
poll of a task in `input_required` carries its `inputRequests`, read as form questions; the
answer goes with `tasks/update` once, a second send of it (a worker lost after the first) is
reported as not taken rather than failing, and the task then finishes with the answer. What no
person can answer (sampling, URL mode, garbage) is set apart by key."""

from __future__ import annotations

import asyncio
from typing import Any

from turnkeeper.activities.mcp.mcp_activity import McpActivities
from turnkeeper.contracts.mcp import McpCallInput, McpTaskInput, McpTaskPollResult
from turnkeeper.contracts.mcp_elicitation import ElicitationAnswer
from turnkeeper.contracts.mcp_task_questions import McpTaskAnswerInput, asked_in_task

from tests.activities.test_mcp_tasks import activities, run, task_server

__all__ = ["activities", "task_server"]  # the fixtures, shared with test_mcp_tasks


def _activity(made: McpActivities, name: str) -> Any:
    return next(a for a in made.tasks.activities() if a.__name__ == name)


async def _polled_until(made: McpActivities, poll: McpTaskInput, status: str) -> McpTaskPollResult:
    for _ in range(50):
        polled: McpTaskPollResult = await run(made.tasks.mcp_poll_task, poll)
        if polled.task.status == status:
            return polled
        await asyncio.sleep(0.1)
    raise AssertionError(f"the task never became {status!r}")


async def test_a_task_question_is_answered_once_and_the_task_finishes(
    activities: McpActivities,
) -> None:
    call = McpCallInput(
        turn_id="turn-1", call_id="toolu_1", name="mcp__lab__clarify", input={"topic": "tides"}
    )
    started = await run(activities.tasks.mcp_start_task, call)
    assert started.task is not None
    poll = McpTaskInput(turn_id="turn-1", call_id="toolu_1", task=started.task)

    waiting = await _polled_until(activities, poll, "input_required")
    asked, unanswerable = asked_in_task(waiting.input_requests)
    assert unanswerable == []
    assert [(q.key, q.message) for q in asked] == [("scope", "Which tides do you mean?")]
    assert asked[0].requested_schema["required"] == ["meaning"]

    answer = McpTaskAnswerInput(
        call_id="toolu_1",
        task=waiting.task,
        answers={"scope": ElicitationAnswer(action="accept", content={"meaning": "ocean"})},
    )
    send = _activity(activities, "mcp_answer_task")
    first, again = await run(send, answer), await run(send, answer)
    assert first.sent and first.detail == ""
    assert not again.sent and "no outstanding input requests ['scope']" in again.detail

    done = await _polled_until(activities, poll, "completed")
    assert done.result is not None
    assert (done.result.content, done.result.is_error) == ("report on tides as ocean", False)


def test_requests_no_person_can_answer_are_set_apart_by_key() -> None:
    form = {"message": "Which?", "requestedSchema": {"type": "object", "properties": {}}}
    requests: dict[str, Any] = {
        "b-form": {"method": "elicitation/create", "params": form},
        "a-sampling": {"method": "sampling/createMessage", "params": {"messages": []}},
        "c-url": {"method": "elicitation/create", "params": {**form, "mode": "url"}},
        "d-garbage": "what?",
        "e-no-schema": {"method": "elicitation/create", "params": {"message": "Which?"}},
    }

    asked, unanswerable = asked_in_task(requests)

    assert [(q.key, q.message) for q in asked] == [("b-form", "Which?")]
    assert unanswerable == ["a-sampling", "c-url", "d-garbage", "e-no-schema"]
    assert asked_in_task(None) == ([], [])
