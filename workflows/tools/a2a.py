"""Remote A2A agents as tools of a turn (`agent.a2a_agents`), each call a remote task the turn
follows durably.

At the turn's start `a2a_describe_agents` reads the named agents' cards (the descriptions the
model reads are recorded in history; an agent that cannot be reached is not offered). A call runs
`a2a_send_message`, which asks the agent to answer at once with its task (`return_immediately`),
and the turn keeps the task's handle in history and polls it: a workflow timer, then a short
`a2a_get_task`, until the task ends or waits for the caller. Nothing is held open in between, so a
remote task may run as long as the agent's `timeout_s` allows, and a worker that restarts replays
the handle and polls the same task: the message is never sent twice by the turn, and a send that
Temporal retries carries the same message id (`A2aSendInput.message_id`).

A task that asks for input (`input-required`) settles the call with what the agent asks and the
task's id; the model answers by calling the tool again with `task_id`, which sends its message
into that task. A `task_id` of a finished task sends a new message in the same remote
conversation. When the turn stops waiting (interrupt, cancel) or the timeout passes, the remote
task is cancelled (`a2a_cancel_task`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from temporalio import workflow
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.a2a import (
        A2A_CALLS_PATCH,
        A2A_TOOL_SCHEMA,
        ACTIVITY_A2A_CANCEL_TASK,
        ACTIVITY_A2A_DESCRIBE_AGENTS,
        ACTIVITY_A2A_GET_TASK,
        ACTIVITY_A2A_SEND_MESSAGE,
        TERMINAL_A2A_STATES,
        A2aAgentInfo,
        A2aCancelResult,
        A2aDescribeInput,
        A2aDescribeResult,
        A2aPollResult,
        A2aSendInput,
        A2aSendResult,
        A2aTaskHandle,
        A2aTaskInput,
    )
    from turnkeeper.contracts.activity_io import ToolCallResult, ToolTraits
    from turnkeeper.contracts.messages import ToolUseBlock
    from turnkeeper.contracts.turn import ExternalToolSpec
    from turnkeeper.workflows.activity_calls import PROPAGATE, AnswerModel, CarryOn, execute
    from turnkeeper.workflows.failures import cause_message
    from turnkeeper.workflows.fleet import fairness as tenant_fairness
    from turnkeeper.workflows.tools.mcp_tasks import (
        CANCEL_RETRY,
        MAX_POLL_S,
        MIN_POLL_S,
        POLL_AGE_SHARE,
        POLL_HEARTBEAT,
        POLL_RETRY,
        SHORT_CALL_TIMEOUT,
    )
    from turnkeeper.workflows.turn_state import Turn

DESCRIBE_TIMEOUT: Final = timedelta(seconds=120)
# A remote agent that asks for no interval is polled every second at first, then, like an MCP
# task, less often as it ages (mcp_tasks.py's bounds).
FIRST_POLL_S: Final = 1.0


async def describe(turn: Turn) -> None:
    """Reads the cards of the agents the agent file names and keeps those that answered in
    `turn`. Nothing runs for an agent without remote agents, so older histories replay as they
    ran; the patch marks the turns that may call them."""
    refs = turn.request.agent.a2a_agents
    if not refs:
        return
    workflow.patched(A2A_CALLS_PATCH)
    described = await execute(
        ACTIVITY_A2A_DESCRIBE_AGENTS,
        A2aDescribeInput(agents=refs, turn_id=workflow.info().workflow_id),
        # An agent that is down is in `errors`; the activity itself failing fails the turn.
        PROPAGATE,
        result_type=A2aDescribeResult,
        options=workflow.ActivityConfig(
            start_to_close_timeout=DESCRIBE_TIMEOUT,
            heartbeat_timeout=POLL_HEARTBEAT,
            retry_policy=POLL_RETRY,
            summary=f"read A2A agent cards · {', '.join(ref.name for ref in refs)}",
        ),
    )
    for error in described.errors:
        workflow.logger.warning("A2A agent not offered: %s", error)
    turn.tools.described_a2a_agents(described.agents, [_traits(a) for a in described.agents])


def offered(names: list[str], turn: Turn) -> list[str]:
    """`names` without the remote agents whose cards could not be read."""
    wanted = {ref.name for ref in turn.request.agent.a2a_agents}
    return [name for name in names if name not in wanted or name in turn.tools.a2a_agents]


def tool_specs(turn: Turn) -> list[ExternalToolSpec]:
    """The remote agents as the model is offered them."""
    return [
        ExternalToolSpec(name=a.name, description=a.description, input_schema=A2A_TOOL_SCHEMA)  # type: ignore[arg-type]
        for a in turn.tools.a2a_agents.values()
    ]


def is_a2a_call(turn: Turn, tool: str) -> bool:
    return tool in turn.tools.a2a_agents


async def call(turn: Turn, use: ToolUseBlock) -> ToolCallResult | str:
    """The result of the model's call of a remote agent: its answer when it gave one at once,
    else the result of its task, followed until it ends or asks for input. A string when the
    call did not complete, for the model to read as an error."""
    agent = turn.tools.a2a_agents[use.name]
    send = _send_input(turn, use)
    if isinstance(send, str):
        return send
    deadline = workflow.now() + timedelta(seconds=agent.timeout_s)
    started = await execute(
        ACTIVITY_A2A_SEND_MESSAGE,
        send,
        AnswerModel(turn, lambda err: _lost(use, "the message could not be sent", err)),
        result_type=A2aSendResult,
        options=_options(turn, agent, f"send to A2A agent {agent.name}"),
    )
    if isinstance(started, str):
        return started
    if started.task is not None:
        turn.tools.followed_a2a_task(started.task)
    if started.result is not None:
        return started.result
    assert started.task is not None
    task = started.task
    try:
        return await _follow(turn, use, agent, task, deadline)
    except BaseException as err:
        if is_cancelled_exception(err):
            # The turn stops waiting (interrupt or cancel): the remote agent is told first.
            await _cancel(turn, use, agent, turn.tools.a2a_tasks[task.task_id])
        raise


def _send_input(turn: Turn, use: ToolUseBlock) -> A2aSendInput | str:
    message = use.input.get("message")
    task_id = use.input.get("task_id")
    send = A2aSendInput(
        turn_id=workflow.info().workflow_id,
        call_id=use.id,
        agent=use.name,
        message=message if isinstance(message, str) else "",
    )
    if task_id is None:
        return send
    earlier = turn.tools.a2a_tasks.get(str(task_id))
    if earlier is None or earlier.agent != use.name:
        known = [t.task_id for t in turn.tools.a2a_tasks.values() if t.agent == use.name]
        return (
            f"task_id {task_id!r} is not a task of {use.name!r} in this turn "
            f"(its tasks: {', '.join(known) or 'none'}); leave task_id out to start a new task."
        )
    # A waiting task takes the answer; a finished one cannot, so the message starts a new task
    # in the same remote conversation.
    waiting = earlier.state not in TERMINAL_A2A_STATES
    return send.model_copy(
        update={
            "task_id": earlier.task_id if waiting else None,
            "context_id": earlier.context_id or None,
        }
    )


async def _follow(
    turn: Turn, use: ToolUseBlock, agent: A2aAgentInfo, task: A2aTaskHandle, deadline: datetime
) -> ToolCallResult | str:
    began = workflow.now()
    while True:
        remaining = (deadline - workflow.now()).total_seconds()
        if remaining <= 0:
            await _cancel(turn, use, agent, task)
            return (
                f"The task {task.task_id!r} of A2A agent {agent.name!r} did not end within "
                f"{agent.timeout_s:g} s (the agent's timeout); it was cancelled."
            )
        age = (workflow.now() - began).total_seconds()
        await workflow.sleep(
            min(poll_interval_s(age), remaining), summary=f"next poll of A2A task {task.task_id}"
        )
        lost = f"task {task.task_id!r} could not be polled"
        poll = A2aTaskInput(
            turn_id=workflow.info().workflow_id, call_id=use.id, tool=use.name, task=task
        )
        polled = await execute(
            ACTIVITY_A2A_GET_TASK,
            poll,
            AnswerModel(turn, lambda err, lost=lost: _lost(use, lost, err)),
            result_type=A2aPollResult,
            options=_options(turn, agent, f"poll A2A task {task.task_id} · {agent.name}"),
        )
        if isinstance(polled, str):
            return polled
        task = polled.task
        turn.tools.followed_a2a_task(task)
        if polled.result is not None:
            return polled.result


def poll_interval_s(age_s: float) -> float:
    """How long to wait before the next poll of a task that has run for `age_s`."""
    return min(MAX_POLL_S, max(MIN_POLL_S, FIRST_POLL_S, age_s * POLL_AGE_SHARE))


async def _cancel(turn: Turn, use: ToolUseBlock, agent: A2aAgentInfo, task: A2aTaskHandle) -> None:
    cancel = A2aTaskInput(
        turn_id=workflow.info().workflow_id, call_id=use.id, tool=use.name, task=task
    )
    answer = await execute(
        ACTIVITY_A2A_CANCEL_TASK,
        cancel,
        CarryOn(
            A2aCancelResult(cancelled=False, detail="the activity failed"),
            "the A2A task was not cancelled: %s",
            # Runs while the turn is being cancelled: that cancel is not this activity's.
            even_when_cancelled=True,
        ),
        result_type=A2aCancelResult,
        options=workflow.ActivityConfig(
            start_to_close_timeout=SHORT_CALL_TIMEOUT,
            retry_policy=CANCEL_RETRY,
            priority=tenant_fairness.priority(turn.request),
            summary=f"cancel A2A task {task.task_id} · {agent.name}",
        ),
    )
    workflow.logger.info(
        "A2A task cancelled" if answer.cancelled else "A2A task not cancelled",
        extra={"call_id": use.id, "a2a_task_id": task.task_id, "detail": answer.detail},
    )


def _options(turn: Turn, agent: A2aAgentInfo, summary: str) -> workflow.ActivityConfig:
    return workflow.ActivityConfig(
        start_to_close_timeout=timedelta(seconds=agent.activity_timeout_s),
        heartbeat_timeout=POLL_HEARTBEAT,
        # A poll is a read. A send is retried too (a worker lost mid-request, a refused
        # connection): every attempt carries the same message id, which a deduplicating agent
        # recognises; the activity answers rather than fails once the agent has replied.
        retry_policy=POLL_RETRY,
        priority=tenant_fairness.priority(turn.request),
        summary=summary,
    )


def _lost(use: ToolUseBlock, what: str, err: ActivityError) -> str:
    return (
        f"A2A agent {use.name!r}: {what}: {cause_message(err)}. "
        "The remote agent may still be working on it."
    )


def _traits(agent: A2aAgentInfo) -> ToolTraits:
    return ToolTraits(
        name=agent.name,
        input_schema=A2A_TOOL_SCHEMA,  # type: ignore[arg-type]
        idempotent=False,
        timeout_s=agent.activity_timeout_s,
    )
