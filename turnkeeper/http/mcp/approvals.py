"""Approvals over MCP (docs/mcp-serve.md, Approvals over MCP): the calls a served turn waits on,
put to the MCP caller as form elicitations (tool, input, why), and the caller's answers applied as
decisions by the token's identity through the HTTP API's own path (`decisions.decide`: the same
checks, signed where the agent's approvers have keys).

Only an identity that may decide a turn's calls is asked (`may_decide`, and a key to sign with
where the approvers have keys); anyone else's call keeps waiting for the approvers' inbox.

How an answer reads (what a person at an MCP client expects of the form they were shown):

- `accept` with `{"approve": true}` approves the call; `{"approve": false}` rejects it; an
  optional `reason` goes with either (a rejection's reason reaches the model).
- `decline` rejects the call: the person saw "approve this call?" and said no.
- `cancel` rejects it too: the person dismissed the question, and a call nobody approved does
  not run. Leaving it waiting instead would hold the MCP call with nobody asked (a question is
  asked once: the tasks extension forbids asking it again under the same key), until the
  approval timeout rejects it anyway.
- Anything else (no `approve`, a non-boolean one, a non-string `reason`, an unknown field, an
  answer to a question that was not asked) is refused with `INVALID_PARAMS` before anything is
  decided: every answer of a batch is read before the first decision is sent.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, ElicitResult
from pydantic import ValidationError

from turnkeeper.contracts.signals import PendingCall, TurnStatus
from turnkeeper.http.access import visible_status
from turnkeeper.http.decisions import DecisionBody, approver_key, decide
from turnkeeper.http.errors import ApiError
from turnkeeper.http.tokens import Identity
from turnkeeper.http.turns import StartedTurn, Turns

# The form every approval question asks for: a yes or no, and optionally why.
APPROVAL_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "true runs the call; false rejects it.",
        },
        "reason": {
            "type": "string",
            "title": "Reason",
            "description": "Why (optional); a rejection's reason reaches the model.",
        },
    },
    "required": ["approve"],
}
# How much of a call's input the question shows: a file's whole content would drown the question.
INPUT_SHOWN_CHARS: Final = 2000


@dataclass(frozen=True)
class ApprovalQuestion:
    """One waiting call put to the caller: `key` names it among the input requests (the call
    id), `params` is the `elicitation/create` request's params (form mode)."""

    key: str
    call_id: str
    tool: str
    message: str

    @property
    def params(self) -> dict[str, Any]:
        """The `elicitation/create` params, as they go on the wire."""
        return {"mode": "form", "message": self.message, "requestedSchema": APPROVAL_SCHEMA}

    @property
    def input_request(self) -> dict[str, Any]:
        """The question as an entry of 2026-07-28 `inputRequests`."""
        return {"method": "elicitation/create", "params": self.params}


@dataclass(frozen=True)
class Verdict:
    """What an answer says: the decision on `call_id`."""

    call_id: str
    approved: bool
    reason: str = ""


async def questions(turns: Turns, workflow_id: str, identity: Identity) -> list[ApprovalQuestion]:
    """The approvals of `workflow_id` that `identity` is asked, read from the turn now
    (`asked_of`).

    Raises:
        ApiError: 404 for a turn `identity` may not see (as the API says it).
    """
    turn, status = await visible_status(turns, workflow_id, identity)
    return asked_of(identity, turn, status)


def asked_of(identity: Identity, turn: StartedTurn, status: TurnStatus) -> list[ApprovalQuestion]:
    """The calls waiting for approval in `status` (its sub-agents' included) that `identity` is
    asked about: none when it may not decide them, or cannot sign where the approvers have
    keys."""
    if not may_answer(identity, turn):
        return []
    return [question(turn, call) for call in status.pending if call.kind == "approval"]


def may_answer(identity: Identity, turn: StartedTurn) -> bool:
    """Whether `identity`'s answer would count: it may decide the turn's calls and, where the
    agent's approvers have keys, has one to sign with."""
    try:
        approver_key(identity, turn)
    except ApiError:
        return False
    return True


def question(turn: StartedTurn, call: PendingCall) -> ApprovalQuestion:
    """The question for `call` of `turn`: which tool, with what input, and why it waits."""
    shown = json.dumps(call.input, ensure_ascii=False, indent=1)
    if len(shown) > INPUT_SHOWN_CHARS:
        cut = len(shown) - INPUT_SHOWN_CHARS
        shown = f"{shown[:INPUT_SHOWN_CHARS]}… ({cut} more characters)"
    message = (
        f"Approve this call of {call.tool}?\n"
        f"Agent: {call.agent_id or turn.request.agent.id}\n"
        f"Input: {shown}\n"
        f"Why: {_why(turn, call)}"
    )
    return ApprovalQuestion(key=call.call_id, call_id=call.call_id, tool=call.tool, message=message)


def _why(turn: StartedTurn, call: PendingCall) -> str:
    if call.workflow_id is not None:
        return f"sub-agent {call.agent_id or call.workflow_id!r} waits for approval of it"
    constraints = turn.request.task.constraints
    if "*" in constraints.require_approval:
        return "this agent's calls of every tool wait for approval"
    if call.tool in constraints.require_approval:
        return f"this agent's calls of {call.tool} wait for approval"
    return f"{call.tool} waits for a person's approval of every call"


def read_answers(answers: Mapping[str, Any], asked: Collection[str]) -> list[Verdict]:
    """What each answer says, all of them read before any is applied.

    Raises:
        MCPError: `INVALID_PARAMS` for an answer to a question not asked, or a malformed one,
            naming the call and what is wrong; nothing is decided then.
    """
    unasked = sorted(set(answers) - set(asked))
    if unasked:
        raise _malformed(f"no approval question {', '.join(map(repr, unasked))} is open")
    return [read_answer(key, answer) for key, answer in answers.items()]


def read_answer(call_id: str, answer: Any) -> Verdict:
    """What the answer to the question on `call_id` says.

    Raises:
        MCPError: `INVALID_PARAMS` for an answer that is not an elicitation result of the
            approval form.
    """
    try:
        result = answer if isinstance(answer, ElicitResult) else ElicitResult.model_validate(answer)
    except ValidationError:
        raise _malformed(f"the answer on call {call_id!r} is not an elicitation result") from None
    if result.action == "decline":
        return Verdict(call_id, False, "declined over MCP")
    if result.action == "cancel":
        return Verdict(call_id, False, "the approval question was dismissed over MCP")
    content = dict(result.content or {})
    approve, reason = content.pop("approve", None), content.pop("reason", "")
    if not isinstance(approve, bool):
        raise _malformed(f"the answer on call {call_id!r} needs `approve`: true or false")
    if not isinstance(reason, str):
        raise _malformed(f"the answer on call {call_id!r} has a `reason` that is not a string")
    if content:
        unknown = ", ".join(sorted(content))
        raise _malformed(f"the answer on call {call_id!r} has fields the form lacks: {unknown}")
    return Verdict(call_id, approve, reason)


async def apply(
    turns: Turns, workflow_id: str, identity: Identity, verdicts: list[Verdict]
) -> list[str]:
    """Sends each verdict as `identity`'s decision (the API's path); the call ids it decided.
    A call decided meanwhile by someone else, or no longer waiting, is skipped: the turn's own
    record says who decided it.

    Raises:
        MCPError: `INVALID_PARAMS` when the turn refuses the decision for another reason (not
            an approver any more, a signature it does not take), `INTERNAL_ERROR` when Temporal
            cannot be reached.
    """
    decided: list[str] = []
    for verdict in verdicts:
        body = DecisionBody(
            call_id=verdict.call_id, approved=verdict.approved, reason=verdict.reason
        )
        try:
            await decide(turns, workflow_id, body, identity)
        except ApiError as err:
            if err.status in (404, 409):
                continue
            code = INTERNAL_ERROR if err.status >= 500 else INVALID_PARAMS
            why = f"the decision on {verdict.call_id!r} was refused: {err}"
            raise MCPError(code, why) from None
        decided.append(verdict.call_id)
    return decided


def waits_for_person(status: TurnStatus) -> bool:
    """Whether the turn waits on a call that a person decides (its own or a sub-agent's)."""
    return any(call.kind == "approval" for call in status.pending)


def _malformed(why: str) -> MCPError:
    return MCPError(INVALID_PARAMS, f"{why}; nothing was decided")
