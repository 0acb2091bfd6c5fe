"""How the console command shows turns: reports, failures, status, transcripts, and the calls
waiting for a human together with the exact commands that decide them.

Everything a model or a user wrote is wrapped in `Text`, never parsed as rich markup: the demo's
answers start with "[offline demo model]", which markup would swallow as a style tag.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from turnkeeper.client.turns import TurnFailure, WaitingTurn
from turnkeeper.console.subagent_tree import group_waiting, subagent_lines, waiting_in
from turnkeeper.console.target import Target
from turnkeeper.contracts.attachments import DocumentBlock, ImageBlock
from turnkeeper.contracts.budget_extension import AMOUNT_FIELDS, BudgetRequest
from turnkeeper.contracts.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ToolUseBlock,
)
from turnkeeper.contracts.names import (
    SIGNAL_APPROVE,
    SIGNAL_SUBMIT_TOOL_RESULT,
    UPDATE_DECIDE,
    UPDATE_EXTEND_BUDGET,
)
from turnkeeper.contracts.signals import PendingCall, RefusedDecision, TurnStatus
from turnkeeper.contracts.turn import AgentReport

SUMMARY_CHARS = 80
# Before each line of a long argument shown whole.
_MARGIN = "      │ "


def local_user() -> str:
    """The approver name used when `--approver` is not given."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers) and no USER variable
        return ""


def started(console: Console, workflow_id: str, target: Target) -> None:
    console.print(Text.assemble("turn ", (workflow_id, "bold")), soft_wrap=True)
    console.print(
        Text.assemble("Web UI: ", (target.workflow_url(workflow_id), "cyan")), soft_wrap=True
    )


def report(console: Console, turn_report: AgentReport) -> None:
    if turn_report.output:
        console.print(Panel(Text(turn_report.output), title="output", title_align="left"))
    console.print(counters(turn_report))
    for line in subagent_lines(turn_report):
        console.print(line, soft_wrap=True)


def counters(turn_report: AgentReport) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim")
    grid.add_column()
    usage = turn_report.usage
    rows = [
        ("outcome", turn_report.outcome),
        ("model calls", str(turn_report.llm_calls)),
        ("tool calls", str(turn_report.tool_calls)),
        ("iterations", str(turn_report.iterations)),
        ("tokens", f"{usage.input_tokens:,} in / {usage.output_tokens:,} out"),
        ("cache", f"{usage.cache_read_tokens:,} read / {usage.cache_write_tokens:,} written"),
        ("cost", cost_words(turn_report, 6)),
        ("duration", f"{turn_report.duration_ms / 1000:.1f} s"),
        ("models", ", ".join(turn_report.models_used) or "none"),
    ]
    if turn_report.skills_loaded:
        rows.append(("skills loaded", ", ".join(turn_report.skills_loaded)))
    if turn_report.sandbox is not None:
        # The files `turnkeeper sandbox get` can fetch.
        rows.append(("sandbox files", ", ".join(turn_report.sandbox.files) or "none"))
    if turn_report.started_by is not None:
        rows.append(("started by", turn_report.started_by))
    for name, value in rows:
        grid.add_row(name, Text(value))
    return grid


def cost_words(turn_report: AgentReport, digits: int) -> str:
    """The cost, and the calls it leaves out: a cost nobody knows is never shown as $0."""
    known = f"${turn_report.cost_usd:.{digits}f}"
    unknown = turn_report.unpriced_calls
    if not unknown:
        return known
    if unknown == turn_report.llm_calls:
        return "unknown (no price for the model, and its endpoint did not report one)"
    calls = "call" if unknown == 1 else "calls"
    return f"{known} + {unknown} {calls} of unknown cost"


def failure(console: Console, turn_failure: TurnFailure) -> None:
    console.print(
        Text.assemble(
            ("turn failed: ", "bold red"), (turn_failure.type, "bold"), ": ", turn_failure.message
        ),
        soft_wrap=True,
    )
    if turn_failure.report is not None:
        console.print(Text("partial report:", style="dim"))
        report(console, turn_failure.report)


def status(
    console: Console,
    workflow_id: str,
    turn_status: TurnStatus,
    target: Target,
    *,
    full: bool = False,
) -> None:
    grid = Table(title=Text(workflow_id), show_header=False, title_justify="left")
    grid.add_column(style="dim")
    grid.add_column()
    grid.add_row("state", Text(turn_status.state, style=_state_style(turn_status.state)))
    grid.add_row("iteration", str(turn_status.iteration))
    grid.add_row("model calls", str(turn_status.llm_calls))
    grid.add_row("tool calls", str(turn_status.tool_calls))
    grid.add_row("cost", f"${turn_status.cost_usd:.6f}")
    grid.add_row("elapsed (excluding human waits)", f"{turn_status.elapsed_ms / 1000:.1f} s")
    if turn_status.skills_loaded:
        grid.add_row("skills loaded", ", ".join(turn_status.skills_loaded))
    if turn_status.started_by is not None:
        grid.add_row("started by", Text(turn_status.started_by))  # a name, never markup
    console.print(grid)
    for line in subagent_lines(turn_status):
        console.print(line, soft_wrap=True)
    if turn_status.pending:
        pending(console, workflow_id, turn_status.pending, target, full=full)
    if turn_status.budget_request is not None:
        budget_request(console, workflow_id, turn_status.budget_request, target)
    if turn_status.refused_decisions:
        refused(console, turn_status.refused_decisions, turn_status.refused_decisions_dropped)


def refused(console: Console, decisions: Sequence[RefusedDecision], dropped: int = 0) -> None:
    """The signals the turn ignored (mostly `approve`), and why: a signal has no other answer.
    The turn keeps the latest 20; `dropped` older ones were pushed out (by a flood, perhaps)."""
    console.print(Text("refused decisions (latest last):", style="dim"))
    if dropped:
        noun = "decision" if dropped == 1 else "decisions"
        console.print(Text(f"  … {dropped} earlier refused {noun} dropped", style="yellow"))
    for decision in decisions:
        who = f" from {decision.approver}" if decision.approver else ""
        signal = "" if decision.signal == SIGNAL_APPROVE else f"{decision.signal} "
        console.print(
            Text.assemble(
                ("  ✗ ", "red"),
                f"{signal}call {decision.call_id or '?'}{who} at {_clock(decision.at)}: ",
                (decision.reason, "dim"),
            ),
            soft_wrap=True,
        )


def _state_style(state: str) -> str:
    ended = {"completed": "green", "interrupted": "red", "failed": "red", "cancelled": "red"}
    return ended.get(state, "yellow")


def pending(
    console: Console,
    workflow_id: str,
    calls: Sequence[PendingCall],
    target: Target,
    *,
    full: bool = False,
) -> None:
    """Each waiting call and the commands that decide it; its input on one line, abridged, or
    with `full` every argument whole (what an approver approves)."""
    for call in calls:
        verb = _AWAITED[call.kind]
        # A sub-agent's call is decided in the child that waits (an ancestor would pass it on).
        waits_in = waiting_in(call, workflow_id)
        console.print(
            Text.assemble(
                ("⏸ ", "yellow"),
                (call.tool, "bold"),
                f" waits for {verb} ",
                (f"in sub-agent {waits_in} " if waits_in != workflow_id else "", "magenta"),
                (f"(call {call.call_id}, since {_clock(call.since)})", "dim"),
            ),
            soft_wrap=True,
        )
        if call.message is not None:  # a server's question: what it asks comes first
            console.print(Text(f"  asks: {call.message}"), soft_wrap=True)
        if full:
            console.print(whole_input(call.input), soft_wrap=True)
        else:
            console.print(Text(f"  input: {summarize(call.input)}"), soft_wrap=True)
            if abridged(call.input):
                where = target.ours("status", waits_in, "--full")
                console.print(Text(f"  (abridged; in full: {where})", style="dim"), soft_wrap=True)
        for command in decide_commands(waits_in, call, target):
            console.print(Text(f"  {command}", style="cyan"), soft_wrap=True)


def budget_request(
    console: Console, workflow_id: str, request: BudgetRequest, target: Target
) -> None:
    """What the turn waits to have extended, and the commands that extend it."""
    console.print(
        Text.assemble(
            ("⏸ ", "yellow"),
            ("budget", "bold"),
            f" waits for an extension of its {request.budget.replace('_', ' ')} ",
            (f"(request {request.number}, since {_clock(request.since)})", "dim"),
        ),
        soft_wrap=True,
    )
    console.print(Text(f"  {request.message}"), soft_wrap=True)
    for command in extend_commands(workflow_id, request, target):
        console.print(Text(f"  {command}", style="cyan"), soft_wrap=True)


# An amount to show in the printed commands, per budget, in the payload's units.
_EXAMPLE_AMOUNTS = {"cost": "1", "time": "60000", "iterations": "5", "tool_interactions": "5"}


def extend_commands(workflow_id: str, request: BudgetRequest, target: Target) -> list[str]:
    """Ours, then the plain `temporal` CLI update with the contract's JSON."""
    field, amount = AMOUNT_FIELDS[request.budget], _EXAMPLE_AMOUNTS[request.budget]
    payload = {field: json.loads(amount), "approver": local_user(), "reason": ""}
    return [
        target.ours("extend", workflow_id, "--" + field.replace("_", "-"), amount),
        _update_command(target, workflow_id, UPDATE_EXTEND_BUDGET, payload),
    ]


def _update_command(target: Target, workflow_id: str, update: str, payload: Any) -> str:
    """The plain `temporal` CLI command that sends `update` with the contract's JSON."""
    return target.temporal_cli(
        "workflow",
        "update",
        "execute",
        "--workflow-id",
        workflow_id,
        "--name",
        update,
        "--input",
        json.dumps(payload),
    )


# What a pending call of each kind waits for, as `pending` says it.
_AWAITED = {
    "approval": "approval",
    "external": "an external result",
    "elicitation": "an answer to its server's question",
}


def decide_commands(workflow_id: str, call: PendingCall, target: Target) -> list[str]:
    """Ours, then the plain `temporal` CLI signal with the contract's JSON."""
    if call.kind == "elicitation":
        return _answer_commands(workflow_id, call, target)
    if call.kind == "approval":
        payload: dict[str, Any] = {
            "call_id": call.call_id,
            "approved": True,
            "reason": "",
            "approver": local_user(),
        }
        ours = [
            target.ours("approve", workflow_id, call.call_id),
            target.ours("reject", workflow_id, call.call_id, "--reason", "why not"),
        ]
        signal = SIGNAL_APPROVE
    else:
        payload = {"call_id": call.call_id, "output": "…", "is_error": False}
        ours = [target.ours("submit", workflow_id, call.call_id, "--output", "…")]
        signal = SIGNAL_SUBMIT_TOOL_RESULT
    temporal = target.temporal_cli(
        "workflow",
        "signal",
        "--workflow-id",
        workflow_id,
        "--name",
        signal,
        "--input",
        json.dumps(payload),
    )
    return [*ours, temporal]


def _answer_commands(workflow_id: str, call: PendingCall, target: Target) -> list[str]:
    """A server's question: declined or cancelled with ours, answered through the `decide`
    update with the answer (a field per property of its schema) as `input`."""
    schema = call.requested_schema or {}
    fields = schema.get("properties") or {}
    # The required fields (else all): the shortest answer the server may take.
    wanted = schema.get("required") or (list(fields) if isinstance(fields, dict) else [])
    answer = {str(name): "…" for name in wanted} if isinstance(wanted, list) else {}
    payload = {"call_id": call.call_id, "approved": True, "input": answer}
    return [
        target.ours("reject", workflow_id, call.call_id, "--reason", "cancel"),
        _update_command(target, workflow_id, UPDATE_DECIDE, payload | {"approver": local_user()}),
    ]


def summarize(value: dict[str, Any], limit: int = SUMMARY_CHARS) -> str:
    """One line of a tool input; long strings (a file's content) shown by their size."""
    shown = {
        key: f"<{len(item)} chars>" if isinstance(item, str) and len(item) > 40 else item
        for key, item in value.items()
    }
    text = json.dumps(shown, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def abridged(value: dict[str, Any]) -> bool:
    """Whether `summarize` leaves out any of `value`."""
    return summarize(value) != json.dumps(value, ensure_ascii=False)


def whole_input(value: dict[str, Any]) -> Text:
    """Every argument of a call, whole. Names and one-line values are JSON, so their bounds
    show; a value of several lines (a file's content) follows its name line by line, each
    after a `│` margin, so no line of it can pass for another argument."""
    lines = [Text("  input, in full:")]
    for name, item in value.items():
        label = Text(f"    {json.dumps(name, ensure_ascii=False)}:", style="dim")
        if isinstance(item, str) and "\n" in item:
            lines.append(label)
            lines += [Text.assemble((_MARGIN, "dim"), line) for line in item.split("\n")]
        else:
            lines.append(Text.assemble(label, f" {json.dumps(item, ensure_ascii=False)}"))
    return Text("\n").join(lines)


def _clock(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def transcript(console: Console, messages: Sequence[Message]) -> None:
    for message in messages:
        style = "bold blue" if message.role == "user" else "bold green"
        console.print(Text(message.role, style=style))
        for block in message.content:
            console.print(_block(block), soft_wrap=True)


def _block(block: ContentBlock) -> Text | Group:
    if isinstance(block, TextBlock):
        return Text("  " + block.text)
    if isinstance(block, ImageBlock | DocumentBlock):
        return _attachment(block, "  ")
    if isinstance(block, ToolUseBlock):
        return Text.assemble(
            "  → ",
            (block.name, "bold"),
            f" {summarize(block.input, 200)} ",
            (f"[{block.id}]", "dim"),
        )
    mark = ("✗ error", "red") if block.is_error else ("←", "dim")
    body = block.text()
    shown = body if len(body) <= 300 else body[:299] + "…"
    parts = block.content if isinstance(block.content, list) else []
    return Group(
        Text.assemble("  ", mark, (f" [{block.tool_use_id}]", "dim")),
        Text("    " + shown.replace("\n", "\n    ")),
        *(_attachment(p, "    ") for p in parts if isinstance(p, ImageBlock | DocumentBlock)),
    )


def _attachment(block: ImageBlock | DocumentBlock, indent: str) -> Text:
    """Its name, type, size and digest: what `turnkeeper attachment get` takes."""
    return Text.assemble(indent, (f"[{block.type}] ", "magenta"), block.summary())


def waiting_turns(
    console: Console, turns: Sequence[WaitingTurn], target: Target, *, full: bool = False
) -> None:
    """One block per turn that waits, then each of its pending calls with its commands. A
    sub-agent's call, listed by each ancestor too, shows once, under the sub-agent."""
    for group in group_waiting(turns):
        state = group.status.state if group.status else "state unknown"
        under = f"  sub-agent of {group.root}" if group.root else ""
        agent = f" · agent {group.agent_id}" if group.agent_id else ""
        console.print(
            Text.assemble(
                (group.workflow_id, "bold"),
                (under, "magenta"),
                (f"{agent} · {state}" if group.listed else "", "dim"),
            ),
            soft_wrap=True,
        )
        if group.listed and group.status is None:
            console.print(Text("  no worker answered its status query", style="yellow"))
            continue
        pending(console, group.workflow_id, group.calls, target, full=full)
        if group.status is not None and group.status.budget_request is not None:
            budget_request(console, group.workflow_id, group.status.budget_request, target)
