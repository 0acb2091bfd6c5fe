"""How the console shows a tree of sub-agents: each pending call once, under the turn that waits
(`turnkeeper pending`), the sub-agents of a turn under it as they start and finish (`turnkeeper
watch`), and the report's `subagents` (`turnkeeper run` / `result`).

A child's pending call appears in its own `status.pending` and again in every ancestor's, there
with `"workflow_id": "<child id>"`; listing it under each would ask a human to decide it several
times.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rich.text import Text
from rich.tree import Tree

from turnkeeper.client.turns import WaitingTurn
from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.signals import PendingCall, TurnStatus
from turnkeeper.contracts.turn import AgentReport

SUBAGENT_EVENTS = ("subagent_started", "subagent_finished")


def waiting_in(call: PendingCall, holder_id: str) -> str:
    """The workflow id of the turn where `call` waits: the child named by its `workflow_id`,
    or `holder_id` (the turn whose status listed it) for a call of that turn's own."""
    return call.workflow_id or holder_id


@dataclass
class WaitingGroup:
    """One turn that waits, with the calls that wait in it (each call in one group only)."""

    workflow_id: str
    agent_id: str = ""
    status: TurnStatus | None = None
    listed: bool = False
    """The turn was listed itself (else it was seen only in an ancestor's status)."""
    root: str | None = None
    """For a sub-agent: the outermost listed turn whose status showed its calls."""
    calls: list[PendingCall] = field(default_factory=list)

    @property
    def depth(self) -> int:
        """Levels below `root` (0 for a turn listed on its own): child ids extend their
        parent's id by `/<name>-<k>`."""
        if self.root is None or not self.workflow_id.startswith(self.root + "/"):
            return 0
        return self.workflow_id[len(self.root) + 1 :].count("/") + 1

    @property
    def shown(self) -> bool:
        """Whether the group has anything to show: an ancestor whose only waits are its
        children's is not a block of its own (its children name it)."""
        waits_itself = self.status is not None and self.status.budget_request is not None
        return bool(self.calls) or waits_itself or (self.listed and self.status is None)


def group_waiting(turns: Sequence[WaitingTurn]) -> list[WaitingGroup]:
    """The waiting turns regrouped so that each pending call appears once, under the turn that
    waits; a sub-agent's group follows its root's, in the order the turns were listed."""
    groups = {
        turn.workflow_id: WaitingGroup(turn.workflow_id, turn.agent_id, turn.status, listed=True)
        for turn in turns
    }
    seen: set[tuple[str, str]] = set()
    # Outermost ancestors first (shorter ids), so that `root` names the outermost one.
    for turn in sorted(turns, key=lambda turn: turn.workflow_id.count("/")):
        for call in turn.status.pending if turn.status else []:
            owner = waiting_in(call, turn.workflow_id)
            if (owner, call.call_id) in seen:
                continue
            seen.add((owner, call.call_id))
            group = groups.setdefault(owner, WaitingGroup(owner))
            group.calls.append(call)
            if owner != turn.workflow_id and group.root is None:
                group.root = turn.workflow_id
    order = {turn.workflow_id: index for index, turn in enumerate(turns)}

    def position(group: WaitingGroup) -> tuple[int, int, str]:
        anchor = group.root or group.workflow_id
        return (order.get(anchor, len(order)), group.depth, group.workflow_id)

    return sorted((group for group in groups.values() if group.shown), key=position)


def subagent_lines(report: AgentReport | TurnStatus) -> list[Text]:
    """A heading and one line per sub-agent call of the turn (of a status: those ended so far),
    or nothing when it made none. Lines, not a table: a child's id must print whole, to copy."""
    if not report.subagents:
        return []
    nodes: dict[str, SubagentNode] = {}
    fold_report(nodes, report)
    return [Text("sub-agents", style="dim")] + [
        Text.assemble("  ", node.line()) for node in nodes.values()
    ]


@dataclass
class SubagentNode:
    """A sub-agent call of a watched turn, as far as its events (and finally the report) say."""

    workflow_id: str
    name: str
    outcome: str | None = None
    cost_usd: float | None = None
    llm_calls: int | None = None
    tool_calls: int | None = None

    def line(self) -> Text:
        state = self.outcome or "running"
        figures = []
        if self.cost_usd is not None:
            figures.append(f"${self.cost_usd:.6f}")
        if self.llm_calls is not None:
            figures.append(_count(self.llm_calls, "model call"))
        if self.tool_calls is not None:
            figures.append(_count(self.tool_calls, "tool call"))
        return Text.assemble(
            (self.name, "bold"),
            (f" {self.workflow_id} ", "dim"),
            (state, _outcome_style(self.outcome)),
            f" · {' · '.join(figures)}" if figures else "",
        )


def fold_subagent_event(nodes: dict[str, SubagentNode], event: TurnEvent) -> bool:
    """Updates `nodes` (by child workflow id) from a `subagent_started` / `subagent_finished`
    event; False for any other event."""
    if event.kind not in SUBAGENT_EVENTS:
        return False
    child = event.workflow_id or event.call_id or "?"
    node = nodes.setdefault(child, SubagentNode(child, event.tool or _name_of(child)))
    if event.kind == "subagent_finished":
        node.outcome = event.outcome or event.error_type or "finished"
        node.cost_usd = event.cost_usd if event.cost_usd is not None else node.cost_usd
        node.llm_calls = event.llm_calls if event.llm_calls is not None else node.llm_calls
        node.tool_calls = event.tool_calls if event.tool_calls is not None else node.tool_calls
    return True


def fold_report(nodes: dict[str, SubagentNode], report: AgentReport | TurnStatus) -> None:
    """The report's `subagents` are the final word on each child's outcome and figures."""
    for row in report.subagents:
        nodes[row.workflow_id] = SubagentNode(
            row.workflow_id, row.name, row.outcome, row.cost_usd, row.llm_calls, row.tool_calls
        )


def tree(workflow_id: str, nodes: Iterable[SubagentNode]) -> Tree:
    """The watched turn with its sub-agents under it; a grandchild (whose id extends a child's)
    under its parent."""
    root = Tree(Text(workflow_id, style="bold"))
    branches: dict[str, Tree] = {workflow_id: root}
    for node in sorted(nodes, key=lambda node: node.workflow_id.count("/")):
        parent = node.workflow_id.rsplit("/", 1)[0]
        branches[node.workflow_id] = branches.get(parent, root).add(node.line())
    return root


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _name_of(child_id: str) -> str:
    # `<parent id>/<name>-<k>`: the sub-agent's name, when an event does not carry it.
    return child_id.rsplit("/", 1)[-1].rsplit("-", 1)[0]


def _outcome_style(outcome: str | None) -> str:
    if outcome is None:
        return "yellow"
    return "green" if outcome in ("completed", "max_tokens") else "red"
