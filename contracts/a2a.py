"""Remote A2A agents as tools of a turn: what the agent file names, and the activities' inputs and
results.

The worker's configuration (`TURNKEEPER_A2A_CONFIG`) says where each remote agent is and how to
authenticate to it; an agent file only names the agents it may call (`agent.a2a_agents`), so that
neither a URL the worker must trust nor a credential ever travels in a turn request or its
history. Each named agent is offered to the model as a tool of that name whose input is a message
(`A2A_TOOL_SCHEMA`). A call sends the message and gets the remote task back at once; the turn
then follows the task with short polls between workflow timers (`workflows/tools/a2a.py`).
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, field_validator
from turnkeeper.contracts.a2a_agents import A2aAgentRef
from turnkeeper.contracts.activity_io import ToolCallResult
from turnkeeper.contracts.claim_check import ClaimChecked
from turnkeeper.contracts.contract_model import ContractModel

# Temporal activity names: never rename one after a release, in-flight histories refer to them.
ACTIVITY_A2A_DESCRIBE_AGENTS: Final = "a2a_describe_agents"
ACTIVITY_A2A_SEND_MESSAGE: Final = "a2a_send_message"
ACTIVITY_A2A_GET_TASK: Final = "a2a_get_task"
ACTIVITY_A2A_CANCEL_TASK: Final = "a2a_cancel_task"

# The marker of the turns that may call remote A2A agents (workflows/tools/a2a.py).
A2A_CALLS_PATCH: Final = "a2a-agent-calls"

A2aTaskState = Literal[
    "submitted",
    "working",
    "input-required",
    "auth-required",
    "completed",
    "failed",
    "canceled",
    "rejected",
]
"""A remote task's state, in the words of the A2A specification's JSON form."""
TERMINAL_A2A_STATES: Final = frozenset({"completed", "failed", "canceled", "rejected"})
# States in which the task waits for the caller: the call settles, the task stays open.
WAITING_A2A_STATES: Final = frozenset({"input-required", "auth-required"})

A2A_TOOL_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What to tell or ask the remote agent"},
        "task_id": {
            "type": "string",
            "description": (
                "To answer a task of this agent that asked for input, or to follow up on a "
                "finished one in the same conversation: the task id an earlier call returned"
            ),
        },
    },
    "required": ["message"],
    "additionalProperties": False,
}


class A2aAgentInfo(ContractModel):
    """A remote agent as the turn offers it, from its card read at the turn's start (kept in
    history, so a card that changes mid-turn changes nothing of it)."""

    name: str
    """The tool name, the agent's key in the worker's configuration."""
    description: str
    """What the model reads: the agent file's, else the card's name, description and skills."""
    timeout_s: float
    """How long one call may wait for its task to end, from the worker's configuration."""
    activity_timeout_s: float
    """The start-to-close timeout of one request to the agent (a send, a poll, a cancel)."""


class A2aDescribeInput(ContractModel):
    """The `a2a_describe_agents` activity's input."""

    agents: list[A2aAgentRef]
    """The agents the agent file names."""
    turn_id: str = ""
    """Only to correlate the worker's logs with the turn."""


class A2aDescribeResult(ContractModel):
    """The agents whose cards could be read, and one sentence per agent that could not (an
    agent that is down costs its tool, never the turn)."""

    agents: list[A2aAgentInfo] = Field(default_factory=list)
    """The agents offered."""
    errors: list[str] = Field(default_factory=list)
    """One sentence per agent that is not offered."""


class A2aTaskHandle(ContractModel):
    """A task of a remote agent that a call started or continued: what a poll needs, kept in
    history so that a worker that restarts polls the same task and never sends again."""

    agent: str
    """The agent's key in the worker's configuration."""
    task_id: str
    """The remote agent's id of the task."""
    context_id: str = ""
    """The remote conversation the task belongs to; a follow-up is sent in it."""
    state: A2aTaskState = "submitted"
    """The state the agent last reported."""

    @field_validator("task_id")
    @classmethod
    def _not_empty(cls, task_id: str) -> str:
        if not task_id:
            raise ValueError("a task needs an id")
        return task_id


class A2aSendInput(ContractModel, ClaimChecked):
    """The `a2a_send_message` activity's input: one call of a remote agent's tool."""

    turn_id: str = ""
    """As in ModelCallInput; with `call_id` it makes the message id, so that a send retried
    after a lost worker carries the same id and a server that deduplicates runs it once."""
    call_id: str
    """The tool call's id."""
    agent: str
    """The agent's key in the worker's configuration."""
    message: str
    """The text the model sends."""
    task_id: str | None = None
    """The task the message answers (one that waits for input); None: a new task."""
    context_id: str | None = None
    """The remote conversation to send it in; None: a new one."""

    @property
    def message_id(self) -> str:
        return f"turnkeeper:{self.turn_id}/{self.call_id}"


class A2aSendResult(ContractModel, ClaimChecked):
    """The `a2a_send_message` activity's result: the task to follow, or the call's stored
    result when the agent answered at once with a message or could not be reached."""

    task: A2aTaskHandle | None = None
    """The task, whenever the agent answered with one (a later call may name it)."""
    result: ToolCallResult | None = None
    """The stored `tool_result` block when the call is settled already: the agent answered
    with a message or a task that ended or waits for input, or could not be reached."""


class A2aTaskInput(ContractModel):
    """The input of `a2a_get_task` and `a2a_cancel_task`: one task of one call of the turn."""

    turn_id: str = ""
    """Only to correlate the worker's logs with the turn."""
    call_id: str
    """The id of the tool call the task answers."""
    tool: str
    """The tool the model called (the agent's name), for the result block and the logs."""
    task: A2aTaskHandle
    """The task."""


class A2aPollResult(ContractModel, ClaimChecked):
    """The `a2a_get_task` activity's result: the task's state and, once the call is settled
    (the task ended, waits for input, or could not be read), the stored `tool_result` block."""

    task: A2aTaskHandle
    """The task with the state the agent reported."""
    result: ToolCallResult | None = None
    """Set when the call is settled."""


class A2aCancelResult(ContractModel):
    """The `a2a_cancel_task` activity's result."""

    cancelled: bool
    """The agent acknowledged the cancel."""
    detail: str = ""
    """Why it did not, when it did not."""
