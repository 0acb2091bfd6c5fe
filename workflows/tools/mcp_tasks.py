"""An MCP tool call that the server answers with a task, followed by the turn durably.

A call of a tool whose discovered spec allows tasks (`McpToolSpec.task_support`, recorded in the
turn's history with the listing) runs `mcp_start_task` instead of `mcp_call_tool`. When the
server answers with a task, the turn holds its handle (server, task id, revision) in history and
polls it: a workflow timer of the server's poll interval (bounded), then a short `mcp_poll_task`
activity, until the task ends. Nothing is held open in between, so a task may run for as long as
the tool's `timeout_s` allows, and a worker that restarts replays the handle and polls the same
task; it never starts the call again.

The whole task is one tool call: counted once against the turn's tool calls, bounded as a whole
by the tool's timeout (on expiry the task is cancelled and the model gets an `is_error` result).
When the turn stops waiting (an interrupt, a cancel of the turn), `mcp_cancel_task` tells the
server with `tasks/cancel` before the stop goes on.

A task that reports `input_required` is waiting for a person: its questions are asked and the
answers given back by `TaskQuestions` (mcp_task_questions.py), and the time that takes is added
to the task's deadline.

Tools whose spec does not allow tasks, and every listing recorded before tasks existed (their
specs read as `forbidden`), keep the `mcp_call_tool` path and its commands unchanged.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.activity_io import ToolCallResult
    from turnkeeper.contracts.mcp import (
        ACTIVITY_MCP_CANCEL_TASK,
        ACTIVITY_MCP_POLL_TASK,
        ACTIVITY_MCP_START_TASK,
        McpCallInput,
        McpTaskCancelResult,
        McpTaskHandle,
        McpTaskInput,
        McpTaskPollResult,
        McpTaskStartResult,
        McpToolSpec,
    )
    from turnkeeper.contracts.messages import ToolUseBlock
    from turnkeeper.workflows.activity_calls import AnswerModel, CarryOn, execute
    from turnkeeper.workflows.failures import cause_message
    from turnkeeper.workflows.fleet import fairness as tenant_fairness
    from turnkeeper.workflows.observation.turn_observer import TurnObserver
    from turnkeeper.workflows.tools.mcp_elicitation import McpElicitations
    from turnkeeper.workflows.tools.mcp_task_questions import TaskQuestions
    from turnkeeper.workflows.turn_state import Turn

# A server's poll interval is honoured within these bounds: polls cost history events (a timer
# and an activity each), and a server asking for 10 ms would fill a turn's history.
MIN_POLL_S: Final = 0.5
MAX_POLL_S: Final = 60.0
DEFAULT_POLL_S: Final = 2.0
# A task that has run long is polled less often, whatever its server asks: at most about ten
# polls per doubling of its age, so a task of hours costs a few hundred events, not thousands.
POLL_AGE_SHARE: Final = 0.1
# A poll is a read: running it again after a lost worker or an unreachable server is harmless.
POLL_RETRY: Final = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=6,
)
POLL_HEARTBEAT: Final = timedelta(seconds=10)
CANCEL_RETRY: Final = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=3)
SHORT_CALL_TIMEOUT: Final = timedelta(seconds=60)


def may_answer_with_task(turn: Turn, tool: str) -> bool:
    """Whether a call of `tool` goes the task way: an MCP tool whose server may answer its
    calls with a task."""
    spec = turn.tools.mcp_tools.get(tool)
    return spec is not None and spec.task_support != "forbidden"


async def follow(
    turn: Turn,
    use: ToolUseBlock,
    call: McpCallInput,
    told: AnswerModel[str],
    options: workflow.ActivityConfig,
    observer: TurnObserver,
    elicitations: McpElicitations | None = None,
) -> ToolCallResult | str:
    """The result of `call`: the server's answer when it gave one at once, else the result of
    the task it started, followed to its end. A string when the call did not complete (as
    `execute` with `told` gives it), for the model to read. With `elicitations`, the task's
    questions are put to a person (mcp_task_questions.py); without, it is only polled."""
    spec = turn.tools.mcp_tools[use.name]
    deadline = workflow.now() + timedelta(seconds=spec.timeout_s)
    started = await execute(
        ACTIVITY_MCP_START_TASK, call, told, result_type=McpTaskStartResult, options=options
    )
    if isinstance(started, str):
        return started
    if started.task is None:
        assert started.result is not None
        return started.result
    task = started.task
    observer.mcp_task_changed(turn, use, task)
    questions = None
    if elicitations is not None:
        polls = workflow.ActivityConfig(heartbeat_timeout=POLL_HEARTBEAT, retry_policy=POLL_RETRY)
        questions = TaskQuestions(turn, use, elicitations, spec, polls)
    try:
        return await _poll_until_settled(turn, use, task, spec, deadline, observer, questions)
    except BaseException as err:
        if is_cancelled_exception(err):
            # The turn stops waiting (interrupt or cancel): the server is told before it goes on.
            await _cancel(turn, use, task, "the turn stopped waiting for it")
        raise
    finally:
        if questions is not None:
            questions.ended()


async def _poll_until_settled(
    turn: Turn,
    use: ToolUseBlock,
    task: McpTaskHandle,
    spec: McpToolSpec,
    deadline: datetime,
    observer: TurnObserver,
    questions: TaskQuestions | None = None,
) -> ToolCallResult | str:
    began = workflow.now()
    while True:
        remaining = (deadline - workflow.now()).total_seconds()
        if remaining <= 0:
            await _cancel(turn, use, task, f"it did not end within the tool's {spec.timeout_s:g} s")
            return (
                f"MCP task {task.task_id!r} of tool {use.name!r} did not finish within "
                f"{spec.timeout_s:g} s (the tool's timeout); it was cancelled."
            )
        age = (workflow.now() - began).total_seconds()
        await workflow.sleep(
            min(poll_interval_s(task, age), remaining),
            summary=f"next poll of MCP task {task.task_id}",
        )
        polled = await _poll(turn, use, task, spec)
        if isinstance(polled, str):
            return polled
        if _changed(task, polled.task):
            observer.mcp_task_changed(turn, use, polled.task)
        task = polled.task
        if polled.result is not None:
            return polled.result
        if task.status == "input_required" and questions is not None:
            waited = questions.waited
            answered = await questions.answer(polled)
            # The person's time (and the answer's) does not count against the tool's timeout.
            deadline += questions.waited - waited
            if isinstance(answered, str):
                return answered
            if answered is not None:
                if _changed(task, answered.task):
                    observer.mcp_task_changed(turn, use, answered.task)
                task = answered.task
                if answered.result is not None:
                    return answered.result


def poll_interval_s(task: McpTaskHandle, age_s: float) -> float:
    """How long to wait before the next poll of `task`, which has run for `age_s`."""
    asked = task.poll_interval_ms / 1000 if task.poll_interval_ms is not None else DEFAULT_POLL_S
    return min(MAX_POLL_S, max(MIN_POLL_S, asked, age_s * POLL_AGE_SHARE))


async def _poll(
    turn: Turn, use: ToolUseBlock, task: McpTaskHandle, spec: McpToolSpec
) -> McpTaskPollResult | str:
    def lost(err: ActivityError) -> str:
        return (
            f"MCP task {task.task_id!r} of tool {use.name!r} could not be polled: "
            f"{cause_message(err)}. It may still be running on the server."
        )

    poll = McpTaskInput(turn_id=workflow.info().workflow_id, call_id=use.id, task=task)
    return await execute(
        ACTIVITY_MCP_POLL_TASK,
        poll,
        AnswerModel(turn, lost),
        result_type=McpTaskPollResult,
        options=workflow.ActivityConfig(
            start_to_close_timeout=timedelta(seconds=spec.activity_timeout_s),
            # A poll is short: a worker that dies during one is noticed in seconds.
            heartbeat_timeout=POLL_HEARTBEAT,
            retry_policy=POLL_RETRY,
            priority=tenant_fairness.priority(turn.request),
            summary=f"poll MCP task {task.task_id} · {task.server} · {use.name}",
        ),
    )


async def _cancel(turn: Turn, use: ToolUseBlock, task: McpTaskHandle, why: str) -> None:
    cancel = McpTaskInput(turn_id=workflow.info().workflow_id, call_id=use.id, task=task)
    answer = await execute(
        ACTIVITY_MCP_CANCEL_TASK,
        cancel,
        CarryOn(
            McpTaskCancelResult(cancelled=False, detail="the activity failed"),
            "tasks/cancel was not sent: %s",
            # Runs while the turn is being cancelled: that cancel is not this activity's.
            even_when_cancelled=True,
        ),
        result_type=McpTaskCancelResult,
        options=workflow.ActivityConfig(
            start_to_close_timeout=SHORT_CALL_TIMEOUT,
            retry_policy=CANCEL_RETRY,
            priority=tenant_fairness.priority(turn.request),
            summary=f"cancel MCP task {task.task_id} · {task.server} · {use.name}",
        ),
    )
    workflow.logger.info(
        "MCP task cancelled" if answer.cancelled else "MCP task not cancelled",
        extra={"call_id": use.id, "mcp_task_id": task.task_id, "why": why, "detail": answer.detail},
    )


def _changed(before: McpTaskHandle, after: McpTaskHandle) -> bool:
    return (before.status, before.status_message) != (after.status, after.status_message)
