"""A long turn's event stream keeps its last `RETAINED_ITERATIONS` iterations: a subscriber that
starts late reads those and the turn's end, and `turnkeeper watch` still shows the turn's state."""

from __future__ import annotations

from rich.console import Console
from turnkeeper.workflows.observation.stream_retention import RETAINED_ITERATIONS

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from turnkeeper.client.events import turn_events
from turnkeeper.console.watch import watch

ITERATIONS = RETAINED_ITERATIONS + 5


async def test_a_late_subscriber_reads_the_last_iterations_and_the_end(turns: TurnRunner) -> None:
    key = new_key()
    tool_rounds = [fake.tool_calls(("list_files", {"path": "."}))] * (ITERATIONS - 1)
    turns.fake.script(key, [*tool_rounds, fake.text("Done.")])
    request = scripted_request(key, agent={"max_iterations": ITERATIONS + 1})
    handle = await turns.start(request)
    report = await handle.result()

    events = [event async for event in turn_events(turns.client, handle.id)]

    started = [e.iteration for e in events if e.kind == "iteration_started"]
    assert started == list(range(ITERATIONS - RETAINED_ITERATIONS + 1, ITERATIONS + 1))
    assert events[0].kind == "iteration_started"  # whole iterations, from their first event
    assert events[-1].kind == "turn_finished" and events[-1].outcome == "completed"
    last_budget = [e for e in events if e.kind == "budget_status"][-1]
    assert last_budget.llm_calls == report.llm_calls == ITERATIONS
    assert last_budget.tool_calls == report.tool_calls == ITERATIONS - 1

    console = Console(record=True, width=160, force_terminal=False)
    state = await watch(turns.client, handle.id, console)
    assert state.ended == "completed"
    assert (state.iteration, state.llm_calls) == (ITERATIONS, ITERATIONS)
    assert f"iteration {ITERATIONS} of {ITERATIONS + 1}" in console.export_text()


async def test_a_turn_within_the_retained_iterations_keeps_its_whole_stream(
    turns: TurnRunner,
) -> None:
    key = new_key()
    rounds = [fake.tool_calls(("list_files", {"path": "."}))] * (RETAINED_ITERATIONS - 1)
    turns.fake.script(key, [*rounds, fake.text("Done.")])
    handle = await turns.start(scripted_request(key, agent={"max_iterations": 30}))
    await handle.result()

    kinds = [event.kind async for event in turn_events(turns.client, handle.id)]

    assert kinds[0] == "turn_started" and kinds[-1] == "turn_finished"
    assert kinds.count("iteration_started") == RETAINED_ITERATIONS
