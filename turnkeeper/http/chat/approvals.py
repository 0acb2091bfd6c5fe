"""The approvals a chat client answers in its next request: decided as the token's identity
through the API's own `decide` (the same checks as `POST /v1/turns/{id}/decisions`), on the turn
of the caller's conversation that runs now, never on a turn the request names."""

from __future__ import annotations

from dataclasses import dataclass

from turnkeeper.http.chat.request import Answer
from turnkeeper.http.conversations import Conversations
from turnkeeper.http.decisions import DecisionBody, decide
from turnkeeper.http.errors import ApiError
from turnkeeper.http.tokens import Identity
from turnkeeper.http.turns import TurnService


@dataclass(frozen=True)
class Decided:
    """Where the turn's stream goes on once the answers are applied."""

    workflow_id: str
    after: int
    """The offset of the last `approval_requested` event answered."""
    decided: set[str]
    """The calls answered."""
    sub_agent_runs: bool
    """One of them was a sub-agent's (its turn goes on, under a call the stream began before)."""


async def apply_answers(
    turns: TurnService,
    conversations: Conversations,
    identity: Identity,
    agent_id: str,
    chat_id: str,
    answers: list[Answer],
) -> Decided:
    """Decides each answered call of the conversation's running turn as `identity`. Every
    answer is checked against what waits before any is sent, so that a request with one answer
    that cannot apply decides nothing; an answer the turn applied already the same way (a
    request sent again) is not sent twice.

    Raises:
        ApiError: 404 no such conversation or agent for the caller, or a call that does not
            wait in its running turn; 409 a call decided the other way already; 403 the caller
            may not decide the turn's calls (`decide`'s checks).
    """
    workflow_id = await conversations.running_turn(identity, agent_id, chat_id)
    if workflow_id is None:
        first = answers[0].call_id
        raise ApiError(404, f"no call {first!r} waits for approval in chat {chat_id!r}")
    status = await turns.status(workflow_id)
    # A sub-agent's calls are listed by its parent, whose `decide` reaches them.
    asked = {c.call_id: c for c in status.pending if c.kind == "approval"}
    waiting = set(asked)
    fresh = [answer for answer in answers if answer.call_id in waiting]
    if len(fresh) < len(answers):
        await _check_resent([a for a in answers if a.call_id not in waiting], turns, workflow_id)
    for answer in fresh:
        body = DecisionBody(call_id=answer.call_id, approved=answer.approved, reason=answer.reason)
        await decide(turns, workflow_id, body, identity)
    return Decided(
        workflow_id,
        max(answer.offset for answer in answers),
        {answer.call_id for answer in answers},
        any(asked[answer.call_id].workflow_id is not None for answer in fresh),
    )


async def _check_resent(answers: list[Answer], turns: TurnService, workflow_id: str) -> None:
    """Nothing when each of `answers` was decided already as it says (sent again).

    Raises:
        ApiError: 404 for a call that never waited here, 409 for one decided otherwise.
    """
    decided = {record.call_id: record for record in await turns.decisions(workflow_id)}
    for answer in answers:
        record = decided.get(answer.call_id)
        if record is None:
            raise ApiError(
                404, f"no call {answer.call_id!r} waits for approval in the chat's running turn"
            )
        if record.approved != answer.approved:
            verdict = "approved" if record.approved else "rejected"
            raise ApiError(409, f"call {answer.call_id!r} is already decided: {verdict}")
