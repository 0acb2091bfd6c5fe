"""Questions an MCP server asks inside a task the turn follows: a person answers, the task goes on.

A task in status `input_required` is waiting for the client. The turn asks a person exactly as
for a plain call's question (`McpElicitations.ask_person`: a pending call of kind
`elicitation`, answered through `decide`, the time budget stopped) and gives the answer to the
task in the way of its revision:

- 2026-07-28: the questions are in the poll's `inputRequests` (held in history with the poll's
  result, so a worker that restarts while the person thinks loses nothing). Each key is asked
  once; the answers go in one `mcp_answer_task` activity (`tasks/update`), then polling goes on.
  The answers are in history before that activity is scheduled, so a restart sends them at most
  once more, which the server refuses or ignores.
- 2025-11-25: the server sends its question only on a `tasks/result` request, so the
  `mcp_task_input` activity makes one and answers during it through the `mcp_elicitation`
  update (the handshake-era path of plain calls); it returns the task's result, or nothing and
  polling goes on.

The task stays one tool call; the time spent answering is added to its deadline (the tool's
`timeout_s` measures the server, not the person). Histories recorded before this module keep
their commands: the whole path sits behind `workflow.patched(TASK_QUESTIONS_PATCH)`, reached
only when a task reports `input_required`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.mcp import McpTaskInput, McpTaskPollResult, McpToolSpec
    from turnkeeper.contracts.mcp_task_questions import (
        ACTIVITY_MCP_ANSWER_TASK,
        ACTIVITY_MCP_TASK_INPUT,
        McpTaskAnswerInput,
        McpTaskAnswerResult,
        asked_in_task,
    )
    from turnkeeper.contracts.messages import ToolUseBlock
    from turnkeeper.workflows.activity_calls import AnswerModel, CarryOn, execute
    from turnkeeper.workflows.failures import cause_message
    from turnkeeper.workflows.fleet import fairness as tenant_fairness
    from turnkeeper.workflows.tools.mcp_elicitation import McpElicitations
    from turnkeeper.workflows.turn_state import Turn

TASK_QUESTIONS_PATCH: Final = "mcp-task-questions"
HANDSHAKE: Final = "2025-11-25"


class TaskQuestions:
    """The questions of one task of the call `use`, answered as its polls find them.

    Args:
        elicitations: the turn's `McpElicitations`, which asks the person.
        poll_options: the heartbeat and retry of the task's polls, which its answers' share.
    """

    def __init__(
        self,
        turn: Turn,
        use: ToolUseBlock,
        elicitations: McpElicitations,
        spec: McpToolSpec,
        poll_options: workflow.ActivityConfig,
    ) -> None:
        self._poll_options = poll_options
        self._turn = turn
        self._use = use
        self._elicitations = elicitations
        self._spec = spec
        self._answered: set[str] = set()
        self.waited = timedelta(0)
        """How long answering took: the task's deadline moves by as much."""

    async def answer(self, polled: McpTaskPollResult) -> McpTaskPollResult | str | None:
        """Answers what `polled` (a poll that found the task `input_required`) asks. A poll's
        result when answering settled the task (2025-11-25), a string when it could not be
        followed, else None: polling goes on."""
        if not workflow.patched(TASK_QUESTIONS_PATCH):
            return None  # a turn that began before: it keeps polling, as it did
        began = workflow.now()
        # Not a `finally`: when a worker evicts the turn mid-answer, Python closes this coroutine
        # outside the workflow's event loop, where reading the clock raises.
        settled = None
        if polled.task.protocol == HANDSHAKE:
            settled = await self._through_result(polled)
        else:
            await self._by_update(polled)
        self.waited += workflow.now() - began
        return settled

    def ended(self) -> None:
        """The call is settled: answers kept for a retried `mcp_task_input` are dropped."""
        self._elicitations.call_ended(self._turn, self._use.id)

    async def _by_update(self, polled: McpTaskPollResult) -> None:
        asked, unanswerable = asked_in_task(polled.input_requests)
        if unanswerable:
            workflow.logger.warning(
                "MCP task asks what no person can answer",
                extra={"call_id": self._use.id, "keys": unanswerable},
            )
        # A server lists a question until it has the answer: each key is asked once.
        fresh = [question for question in asked if question.key not in self._answered]
        if not fresh:
            return
        answers = {}
        for question in fresh:
            answers[question.key] = await self._elicitations.ask_person(
                self._turn, self._use, question
            )
        self._answered.update(answers)
        task = polled.task
        update = McpTaskAnswerInput(
            turn_id=workflow.info().workflow_id, call_id=self._use.id, task=task, answers=answers
        )
        sent = await execute(
            ACTIVITY_MCP_ANSWER_TASK,
            update,
            CarryOn(
                McpTaskAnswerResult(sent=False, detail="the activity failed"),
                "tasks/update was not sent: %s",
            ),
            result_type=McpTaskAnswerResult,
            options=self._options(timedelta(0), f"answer MCP task {task.task_id}", task.server),
        )
        if not sent.sent:
            workflow.logger.info(
                "MCP task did not take the answers",
                extra={"call_id": self._use.id, "detail": sent.detail},
            )

    async def _through_result(self, polled: McpTaskPollResult) -> McpTaskPollResult | str:
        task = polled.task

        def lost(err: BaseException) -> str:
            return (
                f"MCP task {task.task_id!r} of tool {self._use.name!r} could not be given the "
                f"answers it asked for: {cause_message(err)}. It may still be running."
            )

        fetch = McpTaskInput(turn_id=workflow.info().workflow_id, call_id=self._use.id, task=task)
        # The activity lasts while the person thinks: it has `approval_timeout_s` more room.
        allowance = timedelta(seconds=self._turn.request.task.constraints.approval_timeout_s)
        return await execute(
            ACTIVITY_MCP_TASK_INPUT,
            fetch,
            AnswerModel(self._turn, lost),
            result_type=McpTaskPollResult,
            options=self._options(
                allowance, f"answer MCP task {task.task_id} via tasks/result", task.server
            ),
        )

    def _options(self, allowance: timedelta, what: str, server: str) -> workflow.ActivityConfig:
        return workflow.ActivityConfig(
            **self._poll_options,
            start_to_close_timeout=timedelta(seconds=self._spec.activity_timeout_s) + allowance,
            priority=tenant_fairness.priority(self._turn.request),
            summary=f"{what} · {server} · {self._use.name}",
        )
