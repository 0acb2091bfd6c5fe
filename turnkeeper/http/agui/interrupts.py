"""Approvals over AG-UI: a call that waits for a person ends the run with AG-UI 1.0's interrupt
outcome (`RUN_FINISHED` with `outcome: {"type": "interrupt", "interrupts": [...]}`), and the
next `RunAgentInput` of the thread answers it in `resume`.

Why interrupts and not the older frontend-tool convention (a tool call the client answers with
a tool message): both pinned clients speak them (`@ag-ui/client` 1.0.0 keeps a run's
`pendingInterrupts` and refuses a next run that does not answer them all; `ag-ui-protocol`
1.0.0 has `Interrupt`, `RunFinishedInterruptOutcome` and `RunAgentInput.resume`), an interrupt
carries the schema of the answer, and a tool message would put a person's decision where the
model's tool results go.

Each interrupt is one waiting call, its `id` the call id (the `call_id` of the HTTP API's
decisions); an approval's answer is `{"approved", "reason"?, "editedArgs"?}` (`status:
"cancelled"` rejects the call: a call nobody approved does not run), an MCP server's question
(kind `elicitation`) is answered with an object fitting its `responseSchema` (`cancelled`
cancels it). Every answer of a `resume` is checked before the first is applied, each then as a
decision by the token's identity through the API's own path (`decisions.decide`).
"""

from __future__ import annotations

from typing import Final

from ag_ui.core import Interrupt, ResumeEntry

from turnkeeper.contracts.signals import PendingCall, TurnStatus
from turnkeeper.http.agui.run_input import APPROVAL_SCHEMA, approval_answer, elicitation_answer
from turnkeeper.http.decisions import DecisionBody, approver_key, decide
from turnkeeper.http.errors import ApiError
from turnkeeper.http.mcp.approvals import may_answer, question
from turnkeeper.http.tokens import Identity
from turnkeeper.http.turns import StartedTurn, Turns

# The pending kinds a person answers through an interrupt (an `external` call waits for a
# program's result, which is not a person's answer).
ANSWERED: Final = ("approval", "elicitation")
# The reason a run that settles a cancelled interrupt gives: what the model and the record read.
CANCELLED_REASON: Final = "the approval was cancelled over AG-UI"
# The metadata key of what turnkeeper adds to an interrupt and to RUN_STARTED / RUN_FINISHED
# (`ag-ui` is the protocol's own; every other key is free).
METADATA_KEY: Final = "turnkeeper"


def answerable(identity: Identity, turn: StartedTurn, status: TurnStatus) -> list[PendingCall]:
    """The calls of `status` waiting for an answer from `identity` (none when its answer would
    not count: those calls wait for the approvers' inbox, and the run goes on streaming)."""
    if not may_answer(identity, turn):
        return []
    return [call for call in status.pending if call.kind in ANSWERED]


def interrupt(turn: StartedTurn, call: PendingCall) -> Interrupt:
    """The interrupt that asks for the answer to `call`."""
    about = {"tool": call.tool, "input": call.input, "kind": call.kind}
    if call.workflow_id is not None:
        about["workflow_id"] = call.workflow_id  # a sub-agent's call waits in its own turn
    metadata = {METADATA_KEY: about}
    # A sub-agent's call was never announced in this run (its tool call is the child's).
    tool_call_id = call.call_id if call.workflow_id is None else None
    if call.kind == "elicitation":
        return Interrupt(
            id=call.call_id,
            reason="input_required",
            message=call.message or f"{call.tool} asks for input",
            tool_call_id=tool_call_id,
            response_schema=dict(call.requested_schema or {}),
            metadata=metadata,
        )
    return Interrupt(
        id=call.call_id,
        reason="tool_call",
        message=question(turn, call).message,
        tool_call_id=tool_call_id,
        response_schema=APPROVAL_SCHEMA,
        metadata=metadata,
    )


def decisions(
    identity: Identity, turn: StartedTurn, status: TurnStatus, entries: list[ResumeEntry]
) -> list[tuple[PendingCall, DecisionBody]]:
    """Each resume entry as the decision it makes, every one checked before any is sent.

    Raises:
        ApiError: 403 when `identity` may not decide the turn's calls; 404 for an entry whose
            call does not wait in the thread (decided already, or never there: someone else's
            call is not told apart); 422 for a resume that leaves a waiting call unanswered
            (AG-UI: a resume answers every open interrupt), or a payload that does not fit.
    """
    approver_key(identity, turn)
    waiting = {call.call_id: call for call in status.pending if call.kind in ANSWERED}
    decided: list[tuple[PendingCall, DecisionBody]] = []
    for index, entry in enumerate(entries):
        where = f"resume[{index}]"
        call = waiting.get(entry.interrupt_id)
        if call is None:
            raise ApiError(
                404, f"{where}.interruptId: no call {entry.interrupt_id!r} waits in this thread"
            )
        decided.append((call, _decision(call, entry, where)))
    missed = sorted(set(waiting) - {entry.interrupt_id for entry in entries})
    if missed:
        raise ApiError(
            422,
            f"resume: answers no interrupt {', '.join(map(repr, missed))}; a resume answers "
            "every open interrupt of the thread",
        )
    return decided


def _decision(call: PendingCall, entry: ResumeEntry, where: str) -> DecisionBody:
    if call.kind == "elicitation":
        if entry.status == "cancelled":
            return DecisionBody(call_id=call.call_id, approved=False, reason="cancel")
        answer = elicitation_answer(entry, where)
        return DecisionBody(call_id=call.call_id, approved=True, input=answer)
    if entry.status == "cancelled":
        return DecisionBody(call_id=call.call_id, approved=False, reason=CANCELLED_REASON)
    verdict = approval_answer(entry, where)
    edited = verdict.edited_args if verdict.approved else None
    return DecisionBody(
        call_id=call.call_id, approved=verdict.approved, reason=verdict.reason, input=edited
    )


async def apply(
    turns: Turns,
    workflow_id: str,
    identity: Identity,
    decided: list[tuple[PendingCall, DecisionBody]],
) -> None:
    """Sends each decision as `identity`'s, through the API's path (signed where the agent's
    approvers have keys).

    Raises:
        ApiError: what the API answers (409 decided meanwhile, 422 an edit that does not fit
            the tool's schema).
    """
    for _, body in decided:
        await decide(turns, workflow_id, body, identity)
