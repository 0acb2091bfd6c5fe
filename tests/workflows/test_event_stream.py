"""The turn's live event stream (Temporal workflow streams): read by a client from offset 0
after the turn finished, in order and complete; and `turnkeeper watch` on it."""

from __future__ import annotations

from rich.console import Console
from turnkeeper.contracts.names import SIGNAL_APPROVE

from tests.conftest import TurnRunner, new_key, scripted_request, wait_for_pending
from tests.fakes import fake_anthropic as fake
from turnkeeper.client.events import turn_events
from turnkeeper.console.watch import watch


async def test_the_event_stream_tells_the_whole_turn_in_order(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("list_files", {"path": "."}), ("read_file", {"path": "none.md"})),
            fake.tool_calls(("write_file", {"path": "a.md", "content": "x"})),
            fake.text("Done."),
        ],
    )
    handle = await turns.start(scripted_request(key, task={"constraints": {"cost_budget_usd": 5}}))
    [pending] = (await wait_for_pending(handle)).pending
    await handle.signal(SIGNAL_APPROVE, {"call_id": pending.call_id, "approved": True})
    report = await handle.result()

    events = [event async for event in turn_events(turns.client, handle.id)]

    kinds = [event.kind for event in events]
    assert kinds[0] == "turn_started" and kinds[-1] == "turn_finished"
    assert kinds.count("iteration_started") == 3
    assert kinds.count("model_call_finished") == 3
    assert kinds.count("tool_call_started") == kinds.count("tool_call_finished") == 3
    assert kinds.index("approval_requested") < kinds.index("approval_decided")
    assert [e.at for e in events] == sorted(e.at for e in events)
    last_budget = [e for e in events if e.kind == "budget_status"][-1]
    assert last_budget.cost_budget_usd == 5
    assert last_budget.cost_usd == report.cost_usd
    assert events[-1].outcome == "completed"
    failed_read = [e for e in events if e.kind == "tool_call_finished" and e.is_error]
    assert [e.tool for e in failed_read] == ["read_file"]


async def test_watch_replays_a_finished_turn(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(("list_files", {"path": "."})), fake.text("Hi.")])
    handle = await turns.start(scripted_request(key))
    await handle.result()
    console = Console(record=True, width=160, force_terminal=False)

    state = await watch(turns.client, handle.id, console)

    text = console.export_text()
    assert not state.failed and state.ended == "completed"
    assert "iteration 2 of 10" in text
    assert "▶ list_files" in text and "turn completed" in text


async def test_a_streaming_turn_publishes_its_text_as_it_arrives(turns: TurnRunner) -> None:
    key = new_key()
    answer = "The notes say the approval flow ships on Friday."
    turns.fake.script(
        key, [fake.tool_calls(("list_files", {"path": "."}), text="Looking."), fake.text(answer)]
    )

    handle = await turns.start(scripted_request(key, agent={"stream": True}))
    report = await handle.result()

    assert report.output == answer
    [use] = report.messages[1].tool_uses()  # streamed tool input arrives whole
    assert (use.name, use.input) == ("list_files", {"path": "."})
    assert all(r.body.get("stream") for r in turns.fake.requests_for(key))
    events = [event async for event in turn_events(turns.client, handle.id)]
    deltas = [e for e in events if e.kind == "text_delta"]
    assert "".join(e.text or "" for e in deltas if e.iteration == 2) == answer
    assert len([e for e in deltas if e.iteration == 2]) > 1  # it came in pieces
    finished = [i for i, e in enumerate(events) if e.kind == "model_call_finished"]
    last_delta = max(i for i, e in enumerate(events) if e.kind == "text_delta")
    assert finished[0] < last_delta < finished[1]  # deltas of call 2 precede its end


async def test_a_broken_off_stream_is_taken_back_before_the_retry(turns: TurnRunner) -> None:
    key = new_key()
    answer = "The approval flow ships on Friday."
    turns.fake.script(key, [[fake.stream_cut("An answer that breaks off"), fake.text(answer)]])

    handle = await turns.start(scripted_request(key, agent={"stream": True}))
    report = await handle.result()

    assert report.output == answer
    events = [event async for event in turn_events(turns.client, handle.id)]
    kinds = [e.kind for e in events if e.kind in ("text_delta", "text_discarded")]
    [discarded] = [e for e in events if e.kind == "text_discarded"]
    before = [e.text or "" for e in events[: events.index(discarded)] if e.kind == "text_delta"]
    after = [e.text or "" for e in events[events.index(discarded) :] if e.kind == "text_delta"]
    assert kinds[0] == "text_delta" and "text_discarded" in kinds
    assert discarded.attempt == 1 and discarded.discarded_chars == len("".join(before))
    assert discarded.reason and "broke" in discarded.reason
    assert "".join(after) == answer
