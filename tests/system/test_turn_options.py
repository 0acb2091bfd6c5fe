"""What a request can ask of a turn, in `python worker.py`: a structured answer (corrected until
it fits `agent.output_schema`), a streamed answer on the event stream, a conversation continued
by `history_ref`, tool arguments sent back to the model to correct, and a tool outside
`allowed_tools`."""

from __future__ import annotations

import json

import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.conftest import SystemStack
from tests.system.steps import (
    LIST,
    connect_as_user,
    model_saw,
    result,
    start,
    tool_results,
    turn_request,
)

SCORE = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "score": {"type": "integer"}},
    "required": ["title", "score"],
    "additionalProperties": False,
}


async def test_a_structured_answer_is_corrected_until_it_fits_the_schema(
    stack: SystemStack,
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(
        key,
        [
            fake.text('{"title": "Notes", "score": "seven"}'),
            fake.text('```json\n{"title": "Notes", "score": 7}\n```'),
        ],
    )
    request = turn_request(key)
    request["agent"]["output_schema"] = SCORE
    workflow_id = await start(stack, worker, request)

    report = await result(stack, workflow_id)

    assert report["structured_output"] == {"title": "Notes", "score": 7}
    assert report["llm_calls"] == 2
    correction = json.dumps(model_saw(stack, key)[-1])
    assert "at 'score'" in correction and "integer" in correction


async def test_a_streamed_answer_arrives_on_the_event_stream_in_pieces(
    stack: SystemStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    answer = "The notes say the approval flow ships on Friday, after the review."
    stack.fake.script(key, [fake.tool_calls(LIST, text="Looking."), fake.text(answer)])
    request = turn_request(key)
    request["agent"]["stream"] = True

    client = await connect_as_user(worker, monkeypatch)
    handle = await turnkeeper.start_turn(client, request)
    events = [event async for event in handle.events()]

    assert (await handle.result()).output == answer
    assert all(request.body.get("stream") for request in stack.fake.requests_for(key))
    deltas = [event.text or "" for event in events if event.kind == "text_delta"]
    assert "".join(deltas).endswith(answer) and len(deltas) > 2


async def test_a_turn_continues_an_earlier_conversation_by_reference(stack: SystemStack) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(key, [fake.text("Noted: blue."), fake.text("You said blue.")])
    first = await result(stack, await start(stack, worker, turn_request(key)))

    follow_up = turn_request(key)
    follow_up["task"] = {"id": f"task-{key}-2", "input": "What colour did I say?"}
    follow_up["history_ref"] = first["conversation_ref"]
    second = await result(stack, await start(stack, worker, follow_up))

    assert second["output"] == "You said blue."
    roles = [message["role"] for message in model_saw(stack, key)]
    assert roles == ["user", "assistant", "user"]  # the first exchange, by reference
    assert [message["role"] for message in second["messages"]] == ["user", "assistant"]


async def test_arguments_that_do_not_fit_go_back_to_the_model_then_fail_the_turn(
    stack: SystemStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    misfit = ("read_file", {"file": "notes.md"})  # `path` is the parameter
    stack.fake.script(key, [fake.tool_calls(misfit)] * 2 + [fake.text("never")])

    client = await connect_as_user(worker, monkeypatch)
    handle = await turnkeeper.start_turn(client, turn_request(key, max_argument_corrections=1))
    with pytest.raises(turnkeeper.ToolArgumentsInvalid) as failure:
        await handle.result()

    assert "max_argument_corrections=1" in failure.value.message
    [corrected] = tool_results(model_saw(stack, key)[-1])
    assert corrected["is_error"] is True and "path" in json.dumps(corrected)
    assert failure.value.report is not None and failure.value.report.tool_calls == 0


async def test_a_tool_outside_allowed_tools_is_an_autonomy_boundary_violation(
    stack: SystemStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(key, [fake.tool_calls(("write_file", {"path": "x.md", "content": "x"}))])

    client = await connect_as_user(worker, monkeypatch)
    handle = await turnkeeper.start_turn(client, turn_request(key, allowed_tools=["read_file"]))
    with pytest.raises(turnkeeper.AutonomyBoundaryViolation) as failure:
        await handle.result()

    assert "'write_file'" in failure.value.message
    offered = [tool["name"] for tool in stack.fake.requests_for(key)[0].body["tools"]]
    assert offered == ["read_file"]
    assert not (worker.workspace / "x.md").exists()


async def test_a_result_over_the_workers_cap_is_cut_and_a_binary_file_refused(
    stack: SystemStack,
) -> None:
    worker = await stack.start_worker(env={"TURNKEEPER_MAX_TOOL_RESULT_BYTES": "2048"})
    (worker.workspace / "long.md").write_text("a line of the long notes\n" * 400)  # 10,000 B
    # Not an image (read_file answers those with an image block): bytes no text decodes.
    (worker.workspace / "blob.bin").write_bytes(b"\x00\x01\xfe\xff" * 64)
    key = new_key()
    reads = (("read_file", {"path": "long.md"}), ("read_file", {"path": "blob.bin"}))
    stack.fake.script(key, [fake.tool_calls(*reads), fake.text("Read what I could.")])

    report = await result(stack, await start(stack, worker, turn_request(key)))

    assert report["outcome"] == "completed"
    long, blob = tool_results(model_saw(stack, key)[-1])
    # Cut to the worker's cap, with a marker that gives the original size.
    assert long["content"].endswith("of 10000 bytes of 'long.md']"), long["content"][-200:]
    assert len(long["content"].encode()) <= 2048
    assert blob["is_error"] is True and "binary file" in json.dumps(blob)
