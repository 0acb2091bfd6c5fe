"""The console's view of sub-agents, on synthesized statuses, events and reports: each pending
call once under the turn that waits, the tree of `watch`, the report's `subagents`; and the same
views of turns without sub-agents unchanged."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.signals import PendingCall, TurnStatus
from turnkeeper.contracts.turn import AgentReport

from turnkeeper.client.turns import WaitingTurn
from turnkeeper.console import render
from turnkeeper.console.subagent_tree import (
    SubagentNode,
    fold_report,
    fold_subagent_event,
    group_waiting,
    subagent_lines,
    tree,
)
from turnkeeper.console.target import Target
from turnkeeper.console.watch import WatchState, describe

AT = datetime(2026, 11, 26, 15, 4, 5, tzinfo=UTC)
ROOT = "turn-lead-1"
CHILD = f"{ROOT}/researcher-1"
GRANDCHILD = f"{CHILD}/fetcher-1"
TARGET = Target(address=None, namespace=None, ui_url="http://localhost:8233")


def call(call_id: str, tool: str = "write_file", workflow_id: str | None = None) -> PendingCall:
    fields: dict[str, Any] = {"call_id": call_id, "tool": tool, "input": {"path": "a.md"}}
    if workflow_id is not None:
        fields["workflow_id"] = workflow_id
    return PendingCall(kind="approval", since=AT, **fields)


def waiting(workflow_id: str, *calls: PendingCall, agent: str = "lead") -> WaitingTurn:
    status = TurnStatus(state="awaiting_approval", agent_id=agent, pending=list(calls))
    return WaitingTurn(workflow_id=workflow_id, agent_id=agent, started=AT, status=status)


def shown(groups: list[Any]) -> list[tuple[str, list[str], str | None]]:
    return [(g.workflow_id, [c.call_id for c in g.calls], g.root) for g in groups]


def printed(draw: Any) -> str:
    console = Console(width=300, record=True, force_terminal=False)
    draw(console)
    return console.export_text()


def test_turns_without_subagents_keep_their_calls() -> None:
    turns = [waiting("turn-a", call("c1"), call("c2")), waiting("turn-b", call("c3"))]

    assert shown(group_waiting(turns)) == [
        ("turn-a", ["c1", "c2"], None),
        ("turn-b", ["c3"], None),
    ]


def test_a_childs_call_shows_once_under_the_child_listed_or_not() -> None:
    own = call("c0")
    in_child = call("c1", workflow_id=CHILD)
    in_grandchild = call("c2", workflow_id=GRANDCHILD)
    # The root lists all three; the child lists its own call and its child's; the grandchild
    # lists its own (without a workflow id, as every turn lists its own calls).
    turns = [
        waiting(ROOT, own, in_child, in_grandchild),
        waiting(CHILD, call("c1"), in_grandchild, agent="researcher"),
        waiting(GRANDCHILD, call("c2"), agent="fetcher"),
    ]

    assert shown(group_waiting(turns)) == [
        (ROOT, ["c0"], None),
        (CHILD, ["c1"], ROOT),
        (GRANDCHILD, ["c2"], ROOT),
    ]
    # Only the root listed (the children not yet visible): the same groups.
    assert shown(group_waiting(turns[:1])) == shown(group_waiting(turns))


def test_an_ancestor_that_only_waits_on_its_child_is_no_block_of_its_own() -> None:
    turns = [waiting(ROOT, call("c1", workflow_id=CHILD)), waiting(CHILD, call("c1"))]

    groups = group_waiting(turns)

    assert shown(groups) == [(CHILD, ["c1"], ROOT)]
    assert groups[0].depth == 1


def test_pending_prints_each_call_once_with_commands_for_the_turn_that_waits() -> None:
    turns = [waiting(ROOT, call("c1", workflow_id=CHILD)), waiting(CHILD, call("c1"))]

    text = printed(lambda console: render.waiting_turns(console, turns, TARGET))

    assert text.count("waits for approval") == 1
    assert f"{CHILD}  sub-agent of {ROOT}" in text
    assert f"turnkeeper approve {CHILD} c1" in text
    assert f"turnkeeper approve {ROOT} c1" not in text


def test_a_followed_root_names_the_sub_agent_its_call_waits_in() -> None:
    calls = [call("c1", workflow_id=CHILD), call("c0")]

    text = printed(lambda console: render.pending(console, ROOT, calls, TARGET))

    assert f"in sub-agent {CHILD} (call c1" in text
    assert f"turnkeeper approve {CHILD} c1" in text
    assert f"turnkeeper approve {ROOT} c0" in text
    assert "in sub-agent" not in text.split("c0")[0].split("c1,")[-1]


def _report(**fields: Any) -> AgentReport:
    return AgentReport(agent_id="lead", task_id="t", outcome="completed", output="done", **fields)


def test_the_report_lists_its_subagents_and_a_plain_report_has_no_table() -> None:
    rows = [
        {
            "name": "researcher",
            "workflow_id": CHILD,
            "outcome": "completed",
            "cost_usd": 0.0125,
            "llm_calls": 3,
            "tool_calls": 5,
        }
    ]
    plain = _report()

    text = printed(lambda console: render.report(console, _report(subagents=rows)))

    assert subagent_lines(plain) == []
    assert "sub-agents" not in printed(lambda console: render.report(console, plain))
    assert f"  researcher {CHILD} completed · $0.012500 · 3 model calls · 5 tool calls" in text


def test_status_lists_the_subagent_calls_ended_so_far() -> None:
    row = {"name": "researcher", "workflow_id": CHILD, "outcome": "failed", "cost_usd": 0.5}
    status = TurnStatus(state="running", subagents=[row])

    text = printed(lambda console: render.status(console, ROOT, status, TARGET))

    assert "sub-agents" in text and CHILD in text and "failed" in text


def test_watch_folds_subagent_events_into_a_tree() -> None:
    state = WatchState(ROOT)
    started = TurnEvent(kind="subagent_started", at=AT, tool="researcher", workflow_id=CHILD)
    finished = TurnEvent(
        kind="subagent_finished",
        at=AT,
        tool="researcher",
        workflow_id=CHILD,
        outcome="completed",
        cost_usd=0.01,
        llm_calls=2,
        tool_calls=5,
    )

    state.apply(started)
    running = printed(lambda console: console.print(state.render()))
    state.apply(finished)
    done = printed(lambda console: console.print(state.render()))

    assert f"researcher {CHILD} running" in running
    assert f"researcher {CHILD} completed · $0.010000 · 2 model calls · 5 tool calls" in done
    assert str(describe(started)) == f"15:04:05   ⤷ sub-agent researcher started ({CHILD})"
    assert str(describe(finished)) == "15:04:05   ⤶ sub-agent researcher completed"


def test_the_report_has_the_last_word_and_grandchildren_nest() -> None:
    nodes = {CHILD: SubagentNode(CHILD, "researcher")}
    rows = [
        {
            "name": "writer",
            "workflow_id": f"{ROOT}/writer-1",
            "outcome": "failed",
            "cost_usd": 0.5,
            "llm_calls": 1,
            "tool_calls": 0,
        }
    ]
    fold_report(nodes, _report(subagents=rows))
    nodes[GRANDCHILD] = SubagentNode(GRANDCHILD, "fetcher")

    text = printed(lambda console: console.print(tree(ROOT, nodes.values())))

    lines = text.splitlines()
    assert lines[0] == ROOT
    assert any("writer" in line and "failed" in line for line in lines)
    fetcher = next(line for line in lines if "fetcher" in line)
    researcher = next(line for line in lines if "researcher" in line)
    assert fetcher.index("fetcher") > researcher.index("researcher")  # one level deeper


def test_a_watch_without_subagents_has_no_tree() -> None:
    state = WatchState("turn-a")
    state.apply(TurnEvent(kind="tool_call_started", at=AT, tool="read_file", input={}))

    assert not fold_subagent_event(state.subagents, TurnEvent(kind="turn_started", at=AT))
    assert state.subagents == {}
    assert "└" not in printed(lambda console: console.print(state.render()))
