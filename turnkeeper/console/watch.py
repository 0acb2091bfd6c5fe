"""`turnkeeper watch`: follow a turn live from its event stream (Temporal workflow streams).

It reads the stream from offset 0 (`turnkeeper.client.events`), so it can attach at any time,
also to a finished turn, and replays the turn's story before following what comes next. A turn
that delegates shows its sub-agents as a tree under it (`subagent_tree`), from its
`subagent_started` / `subagent_finished` events and, once it has ended, its report.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text
from temporalio.client import Client

from turnkeeper.client.errors import TurnUnavailable
from turnkeeper.client.events import turn_events
from turnkeeper.client.turns import outcome_of
from turnkeeper.console.subagent_tree import SubagentNode, fold_report, fold_subagent_event, tree
from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.turn import AgentReport

_RECENT = 40  # log lines kept on screen
_INPUT_CHARS = 80
_RESULT_WAIT_S = 10.0


@dataclass
class WatchState:
    """What the live view shows, folded from the events seen so far."""

    workflow_id: str
    iteration: int = 0
    max_iterations: int | None = None
    cost_usd: float = 0.0
    cost_budget_usd: float | None = None
    llm_calls: int = 0
    tool_calls: int = 0
    ended: str | None = None
    failed: bool = False
    streaming: str = ""  # text of the model call in progress, when the turn streams
    pending: dict[str, TurnEvent] = field(default_factory=dict)
    lines: list[Text] = field(default_factory=list)
    subagents: dict[str, SubagentNode] = field(default_factory=dict)

    def apply(self, event: TurnEvent) -> None:
        fold_subagent_event(self.subagents, event)
        self.iteration = event.iteration or self.iteration
        self.max_iterations = event.max_iterations or self.max_iterations
        if event.kind == "budget_status":
            self.cost_usd = event.cost_usd or 0.0
            self.cost_budget_usd = event.cost_budget_usd
            self.llm_calls = event.llm_calls or self.llm_calls
            self.tool_calls = event.tool_calls or self.tool_calls
        elif event.kind == "approval_requested" and event.call_id:
            self.pending[event.call_id] = event
        elif event.kind == "approval_decided" and event.call_id:
            self.pending.pop(event.call_id, None)
        elif event.kind == "text_delta":
            self.streaming += event.text or ""
        elif event.kind in ("model_call_finished", "text_discarded"):
            self.streaming = ""
        elif event.kind in ("turn_finished", "turn_failed"):
            self.ended = event.outcome or event.error_type or event.kind
            self.failed = event.kind == "turn_failed" or event.outcome == "cancelled"
        line = describe(event)
        if line is not None:
            self.lines.append(line)

    def render(self) -> RenderableType:
        header = Table.grid(padding=(0, 2))
        header.add_row(
            Text(self.workflow_id, style="bold"),
            f"iteration {self.iteration} of {self.max_iterations or '?'}",
            self._cost(),
            f"{self.llm_calls} model calls · {self.tool_calls} tool calls",
            Text(self.ended or "running", style="green" if not self.ended else "bold"),
        )
        parts: list[RenderableType] = [header, *self.lines[-_RECENT:]]
        if self.subagents:
            parts.append(tree(self.workflow_id, self.subagents.values()))
        if self.streaming:
            parts.append(Text(f"  … {_clip(self.streaming[-_INPUT_CHARS:])}", style="italic"))
        for call in self.pending.values():
            parts.append(
                Text(
                    f"⏸ waiting for approval: {call.tool} ({call.call_id}) — "
                    f"turnkeeper approve {self.workflow_id} {call.call_id}",
                    style="yellow",
                )
            )
        return Group(*parts)

    def apply_report(self, report: AgentReport) -> None:
        """The report's `subagents`: the final outcome and figures of each child."""
        fold_report(self.subagents, report)

    def _cost(self) -> str:
        if self.cost_budget_usd is None:
            return f"${self.cost_usd:.4f}"
        return f"${self.cost_usd:.4f} of ${self.cost_budget_usd:g}"


def describe(event: TurnEvent) -> Text | None:
    """One line of the log for an event, or None for events only the header shows."""
    at = event.at.strftime("%H:%M:%S")
    match event.kind:
        case "iteration_started":
            return Text(f"{at} iteration {event.iteration}", style="dim")
        case "model_call_finished":
            said = f": {_clip(event.text)}" if event.text else ""
            return Text(f"{at}   model {event.model} → {event.stop_reason}{said}")
        case "text_discarded":
            why = f": {_clip(event.reason)}" if event.reason else ""
            return Text(
                f"{at}   model {event.model} attempt {event.attempt} broke off; its "
                f"{event.discarded_chars} streamed characters are discarded{why}",
                "yellow",
            )
        case "model_skipped":
            return Text(f"{at}   model {event.model} skipped: {_clip(event.reason)}", "yellow")
        case "tool_call_started":
            return Text(f"{at}   ▶ {event.tool} {_clip(json.dumps(event.input))}", style="cyan")
        case "tool_call_finished":
            outcome = "error" if event.is_error else "ok"
            return Text(f"{at}   ✓ {event.tool} {outcome}", style="red" if event.is_error else "")
        case "tool_output":
            style = "red" if event.stream == "stderr" else "dim"
            return Text(f"{at}   │ {event.tool} {_clip(event.text)}", style=style)
        case "mcp_task_status":
            said = f": {_clip(event.text)}" if event.text else ""
            task = f"MCP task {event.mcp_task_id} {event.mcp_task_status}"
            return Text(f"{at}   … {event.tool} {task}{said}", style="dim")
        case "approval_requested":
            return Text(f"{at}   ⏸ {event.tool} waits for approval ({event.call_id})", "yellow")
        case "approval_decided":
            verdict = "approved" if event.approved else f"rejected: {event.reason}"
            by = f" by {event.approver}" if event.approver else ""
            return Text(f"{at}   {event.tool} {verdict}{by}", style="yellow")
        case "budget_exhausted":
            why = f": {event.message}" if event.message else ""
            return Text(f"{at}   ⏸ waits for more {event.budget} budget{why}", style="yellow")
        case "budget_extended":
            by = f" by {event.approver}" if event.approver else ""
            return Text(f"{at}   {event.budget} budget extended{by}", style="yellow")
        case "steered":
            by = f" from {event.author}" if event.author else ""
            return Text(f"{at}   ✎ steered{by}: {_clip(event.text)}", style="yellow")
        case "interrupted":
            by = f" by {event.author}" if event.author else ""
            why = f": {_clip(event.reason)}" if event.reason else ""
            return Text(f"{at}   ■ interrupted{by}{why}", style="yellow")
        case "compacted":
            return Text(
                f"{at}   compacted ({event.strategy}): {event.removed_messages} messages left "
                f"out, ~{event.tokens_before} → ~{event.tokens_after} tokens",
                style="dim",
            )
        case "subagent_started":
            child = event.workflow_id or event.call_id
            return Text(f"{at}   ⤷ sub-agent {event.tool} started ({child})", style="magenta")
        case "subagent_finished":
            ended = event.outcome or event.error_type or "finished"
            return Text(f"{at}   ⤶ sub-agent {event.tool} {ended}", style="magenta")
        case "turn_finished":
            return Text(f"{at} turn {event.outcome}", style="bold green")
        case "turn_failed":
            return Text(f"{at} turn failed: {event.error_type}: {event.message}", "bold red")
        case _:
            return None


async def watch(client: Client, workflow_id: str, console: Console) -> WatchState:
    state = WatchState(workflow_id)
    with Live(Text(""), console=console, refresh_per_second=8, transient=False) as live:
        async for event in turn_events(client, workflow_id):
            state.apply(event)
            live.update(state.render())
        if state.subagents:
            await _final_subagents(client, state)
            live.update(state.render())
    return state


async def _final_subagents(client: Client, state: WatchState) -> None:
    """The ended turn's report (or partial report) has the last word on its sub-agents."""
    handle = client.get_workflow_handle(state.workflow_id, result_type=AgentReport)
    result = asyncio.ensure_future(handle.result())
    # The stream ended with the turn, so its result is there; a slow server only loses the
    # report's last word, never the watch.
    await asyncio.wait({result}, timeout=_RESULT_WAIT_S)
    if not result.done():
        result.cancel()
        return
    try:
        outcome = outcome_of(state.workflow_id, result)
    except TurnUnavailable:
        return
    final = outcome.report or (outcome.failure.report if outcome.failure else None)
    if final is not None:
        state.apply_report(final)


def _clip(text: str | None) -> str:
    text = (text or "").replace("\n", " ")
    return text if len(text) <= _INPUT_CHARS else text[: _INPUT_CHARS - 1] + "…"
