"""Forking a turn: a new turn with an earlier turn's request, its `history` the conversation as
it stood before one of that turn's model calls, and a few fields changed (model, system prompt).
For debugging a turn that went wrong, and for trying a prompt or a model on a real conversation.

The request comes from the turn's history (its start event), the conversation from its
`transcript` query (a worker answers it, for a closed turn too, by replaying). Iteration N's
model call saw the messages before the turn's N-th answer; for N = 1 that is the request's own
history, so the fork repeats the turn exactly. For N > 1 the conversation ends with the tool
results of iteration N-1, and the task's input joins that last message, as it does for every
turn that continues a conversation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.client.errors import InvalidTurnRequest, TurnUnavailable
from turnkeeper.client.turns import request_payload, start_turn_workflow, suffixed_turn_id
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.names import QUERY_TRANSCRIPT, WORKFLOW_TYPE
from turnkeeper.contracts.turn import TurnRequest


class ForkError(ValueError):
    """The turn cannot be forked as asked (it does not exist, is not a turn, or has fewer
    iterations); the message says which."""


@dataclass(frozen=True)
class ForkChanges:
    """What the fork changes of the original request; None keeps the original's."""

    model: str | None = None
    system_prompt: str | None = None


async def fork_turn(
    client: Client,
    workflow_id: str,
    at_iteration: int,
    changes: ForkChanges,
    new_id: str | None = None,
) -> str:
    """Starts the fork of `workflow_id` at `at_iteration`; returns the new turn's workflow id.

    Raises:
        ForkError: No such turn, not an `AgentTurnWorkflow`, fewer iterations than asked, or a
            turn of a stored conversation (`history_ref`) forked after its first iteration.
        TurnUnavailable: A workflow with `new_id` is already running.
    """
    if at_iteration < 1:
        raise ForkError(f"--at-iteration must be 1 or more, got {at_iteration}")
    handle = client.get_workflow_handle(workflow_id)
    request, task_queue = await _original(client, handle)
    history: list[Message] | None = None  # iteration 1: the request's own, stored or inline
    if at_iteration > 1:
        if request.history_ref is not None:
            # Its transcript holds only its own exchange: a fork would lose what came before.
            raise ForkError(
                f"{workflow_id} continues a stored conversation (history_ref: a session's "
                "turn); it can be forked at iteration 1 only"
            )
        transcript = [Message.model_validate(m) for m in await _transcript(handle)]
        history = conversation_before(transcript, len(request.history), at_iteration)
        if history is None:
            made = answers(transcript, len(request.history))
            raise ForkError(
                f"{workflow_id} has {made} iteration(s) with a model answer; "
                f"cannot fork at iteration {at_iteration}"
            )
    forked = forked_request(request, history, changes)
    fork_id = new_id or suffixed_turn_id(workflow_id, f"fork-{at_iteration}")
    try:
        await start_turn_workflow(client, forked, workflow_id=fork_id, task_queue=task_queue)
    except InvalidTurnRequest as err:
        raise ForkError(f"{err}; give the fork another --id") from None
    return fork_id


def conversation_before(
    transcript: list[Message], history_length: int, iteration: int
) -> list[Message] | None:
    """The messages before the turn's `iteration`-th answer (its answers begin after the
    request's `history_length` messages); None when the turn has fewer answers."""
    seen = 0
    for index, message in enumerate(transcript):
        if index >= history_length and message.role == "assistant":
            seen += 1
            if seen == iteration:
                return transcript[:index]
    return None


def answers(transcript: list[Message], history_length: int) -> int:
    """How many model answers the turn's own part of `transcript` holds."""
    return sum(1 for m in transcript[history_length:] if m.role == "assistant")


def forked_request(
    request: TurnRequest, history: list[Message] | None, changes: ForkChanges
) -> TurnRequest:
    """`request` with `history` (None: its own) and the changed agent fields, as a root turn
    (no `parent`)."""
    agent: dict[str, Any] = {}
    if changes.model is not None:
        agent["model"] = changes.model
    if changes.system_prompt is not None:
        agent["system_prompt"] = changes.system_prompt
    raw = request_payload(request)
    raw["agent"] = {**raw["agent"], **agent}
    # A fork is a root turn of its own: a sub-agent's fork that kept `parent` would be listed in
    # the lead's pending calls beside the original, under the same call id.
    raw.pop("parent", None)
    if history is not None:
        raw["history"] = [m.model_dump(mode="json") for m in history]
    try:
        return TurnRequest.model_validate(raw)
    except ValidationError as err:
        problem = err.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        message = f"the forked request does not validate: {where}: {problem['msg']}"
        raise ForkError(message) from None


async def _original(client: Client, handle: WorkflowHandle[Any, Any]) -> tuple[TurnRequest, str]:
    """The turn's request as it started and its task queue."""
    try:
        description = await handle.describe()
        history = await handle.fetch_history()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise ForkError(f"no turn with workflow id {handle.id!r}") from None
        raise
    if description.workflow_type != WORKFLOW_TYPE:
        raise ForkError(
            f"{handle.id} is a {description.workflow_type}, not an {WORKFLOW_TYPE}; "
            "fork one of its turns"
        )
    started = history.events[0].workflow_execution_started_event_attributes
    [raw] = await client.data_converter.decode(started.input.payloads, [dict])
    return TurnRequest.model_validate(raw), started.task_queue.name


async def _transcript(handle: WorkflowHandle[Any, Any]) -> list[Any]:
    try:
        return await handle.query(QUERY_TRANSCRIPT)
    except RPCError as err:
        raise TurnUnavailable(f"the transcript of {handle.id} cannot be read: {err}") from None
