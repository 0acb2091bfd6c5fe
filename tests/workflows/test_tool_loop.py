"""The tool loop end to end: real dev server, real worker, the real `anthropic` SDK talking HTTP
to the fake Messages API."""

from __future__ import annotations

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.messages import ToolResultBlock, ToolUseBlock
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake


def results_of(report: AgentReport, index: int) -> list[ToolResultBlock]:
    message = report.messages[index]
    assert message.role == "user"
    return [block for block in message.content if isinstance(block, ToolResultBlock)]


def assert_well_formed(report: AgentReport) -> None:
    """Roles alternate and every tool_use is answered by exactly one tool_result, in order."""
    for index, message in enumerate(report.messages):
        assert message.role == ("user" if index % 2 == 0 else "assistant")
        uses = [b.id for b in message.content if isinstance(b, ToolUseBlock)]
        if uses:
            answered = [b.tool_use_id for b in results_of(report, index + 1)]
            assert answered == uses


async def test_plain_answer(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("Hello there.")])

    report = await turns.run(scripted_request(key))

    assert report.outcome == "completed"
    assert report.output == "Hello there."
    assert (report.llm_calls, report.tool_calls, report.iterations) == (1, 0, 1)
    assert [m.role for m in report.messages] == ["user", "assistant"]
    assert report.usage.input_tokens > 0 and report.usage.output_tokens > 0
    # claude-sonnet-4-6 costs $3 / $15 per million input / output tokens.
    expected = (report.usage.input_tokens * 3 + report.usage.output_tokens * 15) / 1e6
    assert report.cost_usd == pytest.approx(expected)
    assert report.models_used == ["anthropic:claude-sonnet-4-6"]


async def test_multi_iteration_tool_loop(turns: TurnRunner) -> None:
    (turns.workspace / "notes.md").write_text("# Notes\nfirst line\n")
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("list_files", {"path": "."})),
            fake.tool_calls(("read_file", {"path": "notes.md"})),
            fake.text("The notes say: first line."),
        ],
    )

    report = await turns.run(scripted_request(key))

    assert report.outcome == "completed"
    assert (report.llm_calls, report.tool_calls, report.iterations) == (3, 2, 3)
    assert_well_formed(report)
    assert "notes.md" in results_of(report, 2)[0].text()
    assert "first line" in results_of(report, 4)[0].text()
    # The model saw the tool result in its third request.
    third = turns.fake.requests_for(key)[-1].body
    assert "first line" in str(third["messages"][-1]["content"])


async def test_parallel_tool_calls_run_concurrently_and_keep_call_order(
    turns: TurnRunner,
) -> None:
    for name in ("a.md", "b.md", "c.md"):
        (turns.workspace / name).write_text(f"content of {name}\n")
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(
                ("read_file", {"path": "c.md"}),
                ("read_file", {"path": "a.md"}),
                ("read_file", {"path": "b.md"}),
            ),
            fake.text("done"),
        ],
    )

    handle = await turns.start(scripted_request(key))
    report = await handle.result()

    texts = [block.text() for block in results_of(report, 2)]
    assert texts == ["content of c.md\n", "content of a.md\n", "content of b.md\n"]
    assert_well_formed(report)
    # All three tool activities were scheduled before any of them completed.
    events = [event async for event in handle.fetch_history_events()]
    scheduled = [
        e.event_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "tool_call"
    ]
    completed = [
        e.event_id for e in events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
    ]
    assert len(scheduled) == 3
    assert max(scheduled) < min(c for c in completed if c > min(scheduled))


async def test_unknown_tool_is_a_soft_error(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(("launch_rockets", {"count": 3})), fake.text("Sorry.")])

    report = await turns.run(scripted_request(key))

    assert report.outcome == "completed"
    [result] = results_of(report, 2)
    assert result.is_error
    assert "Unknown tool 'launch_rockets'" in result.text()
    assert "read_file" in result.text()


async def test_path_escape_is_an_error_result_and_nothing_is_read(turns: TurnRunner) -> None:
    secret = turns.workspace.parent / "secret.txt"
    secret.write_text("top secret")
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(
                ("read_file", {"path": "../secret.txt"}),
                ("read_file", {"path": str(secret)}),
            ),
            fake.text("I cannot read that."),
        ],
    )

    report = await turns.run(scripted_request(key))

    results = results_of(report, 2)
    assert all(result.is_error for result in results)
    assert all("top secret" not in result.text() for result in results)
    assert "top secret" not in report.model_dump_json()


async def test_max_tokens_outcome(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.max_tokens_reply("The answer is cut")])

    report = await turns.run(scripted_request(key))

    assert report.outcome == "max_tokens"
    assert report.output == "The answer is cut"


async def test_max_iterations_fails_with_partial_report(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(("list_files", {"path": "."}))] * 3)

    handle = await turns.start(scripted_request(key, agent={"max_iterations": 3}))
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()

    error = failure.value.cause
    assert isinstance(error, ApplicationError)
    assert error.type == "MaxIterationsExceeded"
    assert error.non_retryable
    assert "max_iterations=3" in error.message
    partial = AgentReport.model_validate(error.details[0])
    assert partial.outcome == "failed"
    assert (partial.llm_calls, partial.tool_calls, partial.iterations) == (3, 3, 3)
    assert len(partial.messages) == 7


async def test_continuing_from_history(turns: TurnRunner) -> None:
    first_key = new_key()
    turns.fake.script(first_key, [fake.text("My name is Ada.")])
    first = await turns.run(scripted_request(first_key))

    second_key = new_key()
    # The fake picks its step by the number of assistant messages, history included.
    turns.fake.script(second_key, [fake.text("(unused)"), fake.text("You asked for my name.")])
    history = [m.model_dump(mode="json") for m in first.messages]
    report = await turns.run(
        scripted_request(second_key, history=history, task={"input": "What did I ask before?"})
    )

    assert report.output == "You asked for my name."
    assert [m.role for m in report.messages] == ["user", "assistant", "user", "assistant"]
    sent = turns.fake.requests_for(second_key)[0].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"][0]["text"] == "My name is Ada."
