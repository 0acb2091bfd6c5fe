"""`turnkeeper chat`: a conversation at the terminal. Each line you type is a `send` to the
session (a new one, or `--session ID` to go on with one); the turn it starts is followed live:
its answer as it streams (with `agent.stream: true`), each tool call, and each approval, decided
at the prompt as the demo does. The session outlives the chat: leave with Ctrl-D or `/quit` and
come back with `--session ID`; `/close` ends it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rich.panel import Panel
from rich.text import Text
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.client.client import TurnHandle
from turnkeeper.client.client import turn as turn_by_id
from turnkeeper.client.connection import connect
from turnkeeper.client.errors import (
    DecisionRefused,
    InvalidSessionRequest,
    SessionRefused,
    TurnError,
)
from turnkeeper.client.requests import read_agent_file
from turnkeeper.client.sessions import SessionHandle, session, start_session
from turnkeeper.client.turns import short_id
from turnkeeper.console import render
from turnkeeper.console.demo import ask, read_line, send_decision, show_call
from turnkeeper.console.target import DEFAULT_UI_URL, Target
from turnkeeper.console.terminal import CommandError, out
from turnkeeper.contracts.budget_extension import AMOUNT_FIELDS, BudgetKind, BudgetRequest
from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.turn import AgentReport

QUIT: Final = ("/quit", "/exit")
CLOSE: Final = "/close"
PROMPT: Final = "you> "


@dataclass(frozen=True)
class ChatOptions:
    agent_file: Path | None
    session_id: str | None
    task_queue: str
    address: str | None = None
    namespace: str | None = None
    ui_url: str = DEFAULT_UI_URL


async def run_chat(options: ChatOptions) -> int:
    client = await connect(address=options.address, namespace=options.namespace)
    target = Target(client.service_client.config.target_host, client.namespace, options.ui_url)
    chat = await _open(client, options)
    status = await chat.status()
    out.print(
        Text.assemble(
            ("Session ", "dim"),
            (chat.id, "bold"),
            (f" · agent {status.agent_id} · {status.turns} turns so far · ", "dim"),
            (target.workflow_url(chat.id), "cyan"),
        ),
        soft_wrap=True,
    )
    out.print(Text(f"Type a message. {CLOSE} ends the session; Ctrl-D or /quit leaves it open.",
                   style="dim"))  # fmt: skip
    if status.running_turn_id is not None:
        # Back to a session whose turn still runs (the chat was stopped mid-turn, or the turn
        # was sent from elsewhere): its approvals and budget requests are decided here too.
        out.print(Text(f"Turn {status.running_turn_id} is still running; following it.",
                       style="dim"), soft_wrap=True)  # fmt: skip
        await _answer(turn_by_id(client, status.running_turn_id))
    while True:
        line = await read_line(PROMPT)
        if line is None or line in QUIT:
            out.print(Text(f"The session stays open: turnkeeper chat --session {chat.id}",
                           style="dim"), soft_wrap=True)  # fmt: skip
            return 0
        if not line:
            continue
        if line == CLOSE:
            closed = await _close(chat)
            return 0 if closed else 1
        await _exchange(chat, line)


async def _open(client: Client, options: ChatOptions) -> SessionHandle:
    """The session to talk to: `--session ID` if it is running, else a new one (which needs
    `--agent FILE`)."""
    if options.session_id is not None and await _is_running(client, options.session_id):
        return session(client, options.session_id)
    if options.agent_file is None:
        raise CommandError("A new session needs its agent: --agent FILE.", exit_code=2)
    agent, constraints = read_agent_file(options.agent_file)
    session_id = options.session_id or f"chat-{agent.get('id', 'agent')}-{short_id()}"
    try:
        return await start_session(
            client,
            session_id=session_id,
            agent=agent,
            constraints=constraints,
            task_queue=options.task_queue,
        )
    except InvalidSessionRequest as error:
        raise CommandError(str(error), exit_code=2) from None


async def _is_running(client: Client, session_id: str) -> bool:
    try:
        described = await client.get_workflow_handle(session_id).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return False
        raise CommandError(f"Temporal refused the request for {session_id!r}: {error}") from None
    if described.status == WorkflowExecutionStatus.RUNNING:
        return True
    raise CommandError(
        f"Session {session_id!r} has ended; start another with a new --session id.", exit_code=1
    )


async def _exchange(chat: SessionHandle, line: str) -> None:
    """One turn: send, follow it live, show the answer or why there is none."""
    try:
        turn = await chat.send(line)
    except SessionRefused as refusal:
        out.print(Text(f"refused: {refusal}", style="red"), soft_wrap=True)
        return
    await _answer(turn)


async def _answer(turn: TurnHandle) -> None:
    """Follows the turn to its end: its answer, or why there is none."""
    streamed = await _follow(turn)
    try:
        report = await turn.result()
    except TurnError as failure:
        out.print(Text(f"turn failed ({failure.type}): {failure.message}", style="red"),
                  soft_wrap=True)  # fmt: skip
        return
    _show_answer(report, streamed)


async def _follow(turn: TurnHandle) -> bool:
    """Shows the turn's events as they come and decides its approvals; whether text streamed."""
    streamed = False
    async for event in turn.events():
        if event.kind == "text_delta" and event.text:
            if not streamed:
                out.print(Text("agent> ", style="bold green"), end="")
            out.print(event.text, end="", markup=False, highlight=False)
            streamed = True
        elif event.kind == "text_discarded" and streamed:
            # What streamed was not the answer: say so, and let the retry start a new line.
            out.print()
            out.print(Text("  (that answer broke off; retrying)", style="yellow"))
            streamed = False
        elif event.kind == "tool_call_started":
            out.print(Text(f"  → {event.tool} {render.summarize(event.input or {})}",
                           style="dim"), soft_wrap=True)  # fmt: skip
        elif event.kind == "approval_requested":
            await _decide(turn, event)
        elif event.kind == "budget_exhausted":
            await _extend(turn)
    if streamed:
        out.print()
    return streamed


async def _decide(turn: TurnHandle, event: TurnEvent) -> None:
    status = await turn.status()
    call = next((c for c in status.pending if c.call_id == event.call_id), None)
    if call is None or call.kind != "approval":
        return  # decided elsewhere meanwhile
    show_call(call)
    approved, reason = await ask(None)
    await send_decision(turn, call.call_id, approved, reason)


# What the prompt asks for each budget, in the update's units.
_AMOUNT_PROMPTS: Final[dict[BudgetKind, str]] = {
    "cost": "Extend the cost budget by how many USD? (empty: no) ",
    "time": "Extend the time budget by how many ms? (empty: no) ",
    "iterations": "Extend by how many iterations? (empty: no) ",
    "tool_interactions": "Extend by how many tool interactions? (empty: no) ",
}


async def _extend(turn: TurnHandle) -> None:
    """A turn waits for more budget (`on_budget_exhausted: "pause"`): asks at the prompt for an
    amount and extends it, as `turnkeeper extend` does. No amount cancels the turn, which could
    otherwise only wait out `approval_timeout_s` while the session refuses the next message."""
    status = await turn.status()
    request = status.budget_request
    if request is None:
        return  # extended elsewhere meanwhile
    _show_budget_request(turn.id, request)
    while True:
        amount = _amount(request.budget, (await read_line(_AMOUNT_PROMPTS[request.budget])) or "")
        if amount is None:
            await turn.cancel()
            out.print(Text("Not extended: the turn is cancelled (its cost so far counts); "
                           "send the message again to retry it.", style="dim"),
                      soft_wrap=True)  # fmt: skip
            return
        if isinstance(amount, str):
            out.print(Text(amount, style="red"), soft_wrap=True)
            continue
        try:
            await turn.extend_budget(
                **{AMOUNT_FIELDS[request.budget]: amount},
                approver=render.local_user(),
                reason="extended in turnkeeper chat",
            )
        except DecisionRefused as refusal:
            out.print(Text(f"extension refused: {refusal}", style="red"), soft_wrap=True)
            continue
        return


def _show_budget_request(workflow_id: str, request: BudgetRequest) -> None:
    title = (
        f"the turn's {request.budget.replace('_', ' ')} budget is spent (request {request.number})"
    )
    out.print(Panel(Text(f"{request.message}\nturnkeeper extend {workflow_id} …"),
                    title=title, title_align="left", border_style="yellow"))  # fmt: skip


def _amount(budget: BudgetKind, reply: str) -> float | int | str | None:
    """The amount typed at the prompt; None for none (empty, `n`, `no`); a message when it is
    not a positive number of the budget's unit."""
    reply = reply.strip()
    if reply.lower() in ("", "n", "no"):
        return None
    try:
        amount: float | int = float(reply.lstrip("$")) if budget == "cost" else int(reply)
    except ValueError:
        unit = "a number of USD" if budget == "cost" else "a whole number"
        return f"{reply!r} is not {unit}; type an amount, or nothing to cancel the turn"
    if not amount > 0 or amount == float("inf"):
        return f"{reply!r}: the amount must be positive; type nothing to cancel the turn"
    return amount


def _show_answer(report: AgentReport, streamed: bool) -> None:
    if not streamed:
        out.print(Text.assemble(("agent> ", "bold green"), report.output), soft_wrap=True)
    out.print(Text(f"  {render.cost_words(report, 4)} · {report.llm_calls} model calls · "
                   f"{report.tool_calls} tool calls", style="dim"))  # fmt: skip


async def _close(chat: SessionHandle) -> bool:
    try:
        closed = await chat.close("closed from turnkeeper chat")
    except SessionRefused as refusal:
        out.print(Text(f"refused: {refusal}", style="red"), soft_wrap=True)
        return False
    out.print(Text(f"Session closed after {closed.turns} turns, ${closed.cost_usd:.4f}.",
                   style="dim"))  # fmt: skip
    return True
