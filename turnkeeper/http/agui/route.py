"""`POST /v1/agents/{agent_id}/ag-ui` of `turnkeeper serve --agents DIR` (docs/ag-ui.md): AG-UI's
`RunAgentInput` in, its event stream out (Server-Sent Events, `ag_ui.encoder`).

The thread id is a conversation of the agent, owned by the token's identity
(`Conversations`); a run with a new user message starts the conversation's next turn, a run
with `resume` answers the interrupts of the run before. Everything a run can be refused for is
refused before its stream starts, as an HTTP error naming the field or the reason (404 for an
unknown agent and for someone else's thread alike): nothing has been started or decided then.
The AG-UI spec's `RUN_ERROR` is kept for what happens once the run has started (a turn that
fails).
"""

from __future__ import annotations

from ag_ui.core import RunAgentInput
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from turnkeeper.http.access import visible_status
from turnkeeper.http.agui.interrupts import apply, decisions
from turnkeeper.http.agui.run import RunIds, TurnRun, sse
from turnkeeper.http.agui.run_input import NewMessage, requested
from turnkeeper.http.conversations import Conversations
from turnkeeper.http.errors import ApiError
from turnkeeper.http.tokens import Identity
from turnkeeper.http.turns import TurnService

PATH = "/v1/agents/{agent_id}/ag-ui"


async def start_run(
    turns: TurnService,
    conversations: Conversations,
    identity: Identity,
    agent_id: str,
    run: RunAgentInput,
) -> TurnRun:
    """The run `run` asks for, as `identity`: its turn started (a new message) or its answers
    decided (a resume); iterate `TurnRun.events()` for its events.

    Raises:
        ApiError: 404 unknown agent, someone else's thread, or an answer to a call that does
            not wait there; 403, 409 (a turn of the thread still runs) or 422 (naming the
            field), with nothing started or decided.
    """
    ids = RunIds(run.thread_id, run.run_id)
    asked = requested(run)
    if isinstance(asked, NewMessage):
        workflow_id = await conversations.send(identity, agent_id, run.thread_id, asked.text)
        return TurnRun(turns, identity, workflow_id, ids)
    workflow_id = await conversations.running_turn(identity, agent_id, run.thread_id)
    if workflow_id is None:
        answered = ", ".join(repr(entry.interrupt_id) for entry in asked.entries)
        raise ApiError(404, f"resume: no call {answered} waits in this thread")
    turn, status = await visible_status(turns, workflow_id, identity)
    decided = decisions(identity, turn, status, asked.entries)
    await apply(turns, workflow_id, identity, decided)
    return TurnRun(turns, identity, workflow_id, ids, [call for call, _ in decided])


def add_ag_ui(app: FastAPI, turns: TurnService, conversations: Conversations) -> None:
    """Adds the AG-UI endpoint to `app` (whose middleware signs its callers in)."""

    async def ag_ui(agent_id: str, body: RunAgentInput, request: Request) -> StreamingResponse:
        """Run the agent as AG-UI asks: a new user message, or the answers to interrupts."""
        identity: Identity = request.state.identity
        run = await start_run(turns, conversations, identity, agent_id, body)
        request.state.turn = run.workflow_id  # the audit line names the turn
        return StreamingResponse(
            sse(run),
            media_type="text/event-stream",
            # A proxy must pass each event on at once (nginx buffers otherwise).
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    app.add_api_route(PATH, ag_ui, methods=["POST"], summary="AG-UI run of a served agent")
