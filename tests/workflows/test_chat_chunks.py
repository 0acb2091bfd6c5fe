"""A real turn's event stream as the AI SDK's UI message chunks (turnkeeper/http/chat/stream.py):
read from the turn as it runs, the stream stops where the turn waits for an approval it asked
the client for, and the stream that goes on after the decision starts right after it and ends
with the turn's figures from its report."""

from __future__ import annotations

from typing import Any

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from turnkeeper.client.client import turn
from turnkeeper.http.chat import turn_chunks
from turnkeeper.http.chat.chunks import parse_approval_id
from turnkeeper.http.turns import TurnService


async def chunks_of(turns: TurnService, workflow_id: str, **options: Any) -> list[dict[str, Any]]:
    return [chunk async for chunk in turn_chunks(turns, workflow_id, **options) if chunk]


def kinds(chunks: list[dict[str, Any]]) -> list[str]:
    return [chunk["type"] for chunk in chunks]


async def test_a_streamed_answer_is_text_deltas_of_one_step_then_the_finish(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("The workspace holds nothing yet.")])
    handle = await turns.start(scripted_request(key, agent={"stream": True}))

    sent = await chunks_of(TurnService(turns.client), handle.id)

    report = await handle.result()
    assert sent[0] == {"type": "start", "messageId": handle.id,
                       "messageMetadata": {"turn_id": handle.id}}  # fmt: skip
    assert kinds(sent)[1:3] == ["start-step", "text-start"]
    deltas = [chunk["delta"] for chunk in sent if chunk["type"] == "text-delta"]
    assert len(deltas) > 1, "the answer streams in pieces"
    assert "".join(deltas) == "The workspace holds nothing yet."
    assert kinds(sent)[-4:] == ["text-end", "message-metadata", "finish-step", "finish"]
    assert sent[-3]["messageMetadata"]["cost_usd"] == report.cost_usd, "the spend as it grows"
    finish = sent[-1]
    assert finish["finishReason"] == "stop"
    assert finish["messageMetadata"] == {
        "turn_id": handle.id,
        "outcome": "completed",
        "cost_usd": report.cost_usd,
        "input_tokens": report.usage.input_tokens,
        "output_tokens": report.usage.output_tokens,
        "llm_calls": 1,
        "tool_calls": 0,
    }
    assert report.usage.output_tokens > 0


async def test_the_stream_stops_at_an_approval_and_goes_on_after_the_decision(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("list_files", {"path": "."})),
            fake.tool_calls(("write_file", {"path": "out.md", "content": "hi"})),
            fake.text("Written."),
        ],
    )
    request = scripted_request(key, task={"constraints": {"require_approval": ["write_file"]}})
    handle = await turns.start(request)
    service = TurnService(turns.client)

    first = await chunks_of(service, handle.id)

    assert kinds(first)[-2:] == ["finish-step", "finish"]
    assert first[-1]["finishReason"] == "tool-calls"
    assert first[-1]["messageMetadata"]["awaiting_approval"] is True
    listed = next(c for c in first if c["type"] == "tool-input-available")
    listing = next(c for c in first if c["type"] == "tool-output-available")
    assert listed["toolName"] == "list_files" and listing["toolCallId"] == listed["toolCallId"]
    assert isinstance(listing["output"], str), "the result's text, from the transcript"
    asked = first[-3]
    assert asked["type"] == "tool-approval-request"
    offset, call_id = parse_approval_id(asked["approvalId"]) or (0, "")
    assert call_id == asked["toolCallId"]
    assert (await turn(turns.client, handle.id).status()).pending[0].call_id == call_id

    await turn(turns.client, handle.id).approve(call_id, approver="mia")
    rest = await chunks_of(service, handle.id, after=offset, told={call_id: asked["approvalId"]})

    assert rest[1] == {"type": "tool-approval-response", "approvalId": asked["approvalId"],
                       "approved": True}  # fmt: skip
    assert kinds(rest)[2:4] == ["tool-input-available", "tool-output-available"]
    assert rest[3]["output"] and "out.md" in rest[3]["output"]
    text = "".join(c.get("delta", "") for c in rest)
    assert text == "Written."
    assert rest[-1]["finishReason"] == "stop"
    assert rest[-1]["messageMetadata"]["tool_calls"] == 2
