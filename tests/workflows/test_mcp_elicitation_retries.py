"""A handshake-era question whose activity attempt died, on a real worker and dev server. The
death is timed exactly by stand-ins for the two MCP activities (no real server dies on cue):
the first attempt asks through the `mcp_elicitation` update, then fails before the server could
hear the answer; the retry asks the same question. The person is asked once and the answer
reaches the retry; a question the dead attempt left open is replaced, never listed twice."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateStage
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker
from turnkeeper.activities.tools.results import stored_result
from turnkeeper.contracts.mcp import (
    ACTIVITY_MCP_CALL_TOOL,
    ACTIVITY_MCP_LIST_TOOLS,
    McpCallInput,
    McpListToolsInput,
    McpListToolsResult,
    McpToolSpec,
)
from turnkeeper.contracts.mcp_elicitation import (
    UPDATE_MCP_ELICITATION,
    ElicitationAnswer,
    ElicitationAsked,
    McpElicitationInput,
)
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import QUERY_STATUS
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import (
    TurnRunner,
    make_settings,
    new_key,
    providers_for,
    scripted_request,
    wait_for_pending,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from turnkeeper.client.client import TurnHandle
from turnkeeper.payloads.content_store import LocalFolderStore
from turnkeeper.worker.wiring import build_activities, worker_workflows, workflow_runner

TOOL = "mcp__flaky__ask"
ASKED = ElicitationAsked(
    message="Which account?",
    requested_schema={"type": "object", "properties": {"account": {"type": "string"}}},
)


class FlakyServer:
    """Stand-ins for `mcp_list_tools` / `mcp_call_tool`: one idempotent tool that asks a
    question, and whose first attempt dies after the question was asked (`answered_first`:
    after the answer came back; else at once, leaving the question open)."""

    def __init__(self, store: LocalFolderStore, answered_first: bool) -> None:
        self.store = store
        self.answered_first = answered_first
        self.answers: list[tuple[int, ElicitationAnswer]] = []

    @activity.defn(name=ACTIVITY_MCP_LIST_TOOLS)
    async def list_tools(self, request: McpListToolsInput) -> McpListToolsResult:
        spec = McpToolSpec(name=TOOL, server="flaky", tool="ask", idempotent_hint=True)
        return McpListToolsResult(tools=[spec])

    @activity.defn(name=ACTIVITY_MCP_CALL_TOOL)
    async def call_tool(self, call: McpCallInput) -> Any:
        info = activity.info()
        turn = activity.client().get_workflow_handle(info.workflow_id)
        question = McpElicitationInput(call_id=call.call_id, attempt=info.attempt, asked=ASKED)
        if info.attempt == 1 and not self.answered_first:
            await turn.start_update(
                UPDATE_MCP_ELICITATION, question, wait_for_stage=WorkflowUpdateStage.ACCEPTED
            )
            raise ApplicationError("the worker died while the person thought")
        answer = await turn.execute_update(
            UPDATE_MCP_ELICITATION, question, result_type=ElicitationAnswer
        )
        self.answers.append((info.attempt, answer))
        if info.attempt == 1:
            raise ApplicationError("the worker died before the server heard the answer")
        text = f"account {answer.content['account'] if answer.content else None}"
        return await stored_result(
            self.store,
            turn_id=info.workflow_id,
            call_id=call.call_id,
            tool=call.name,
            text=text,
            is_error=False,
            started=time.monotonic(),
        )


@pytest.fixture
def flaky_worker(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> Callable[[bool], Any]:
    """A worker whose MCP activities are `FlakyServer`'s; the rest are the worker's own."""

    def start(answered_first: bool) -> Any:
        return _worker(client, fake_anthropic, tmp_path, answered_first)

    return start


@contextlib.asynccontextmanager
async def _worker(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path, answered_first: bool
) -> AsyncIterator[tuple[TurnRunner, FlakyServer]]:
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    store = LocalFolderStore(settings.store_dir)
    server = FlakyServer(store, answered_first)
    own = build_activities(
        settings, client=client, providers=providers_for(fake_anthropic), store=store
    )
    mcp_names = {ACTIVITY_MCP_LIST_TOOLS, ACTIVITY_MCP_CALL_TOOL}
    kept = [a for a in own if activity._Definition.must_from_callable(a).name not in mcp_names]
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=worker_workflows(),
        workflow_runner=workflow_runner(),
        activities=[*kept, server.list_tools, server.call_tool],
    )
    async with worker:
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic), server


def _asking_request(runner: TurnRunner) -> dict[str, Any]:
    key = new_key()
    runner.fake.script(key, [fake.tool_calls((TOOL, {})), fake.text("done")])
    return scripted_request(key, agent={"tools": [TOOL]})


def _result(report: AgentReport) -> str:
    return next(b for b in report.messages[2].content if isinstance(b, ToolResultBlock)).text()


async def test_a_retry_that_asks_again_gets_the_answer_already_given(
    flaky_worker: Callable[[bool], Any],
) -> None:
    async with flaky_worker(True) as (runner, server):
        handle = await runner.start(_asking_request(runner))
        pending = (await wait_for_pending(handle)).pending[0]
        await TurnHandle(runner.client, handle).approve(pending.call_id, input={"account": "A7"})
        report = AgentReport.model_validate(await handle.result())

    assert [attempt for attempt, _ in server.answers] == [1, 2]
    assert server.answers[1][1] == ElicitationAnswer(action="accept", content={"account": "A7"})
    assert _result(report) == "account A7"
    assert [d.call_id for d in report.decisions] == [pending.call_id]  # the person, once


async def test_a_question_left_open_by_a_dead_attempt_is_replaced_by_the_retrys(
    flaky_worker: Callable[[bool], Any],
) -> None:
    async with flaky_worker(False) as (runner, server):
        handle = await runner.start(_asking_request(runner))
        # The retry's question replaces the dead attempt's: one listed, asked by attempt 2.
        await _asked_by_the_retry(handle)
        status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
        assert len(status.pending) == 1
        await TurnHandle(runner.client, handle).approve(
            status.pending[0].call_id, input={"account": "B2"}
        )
        report = AgentReport.model_validate(await handle.result())

    assert [attempt for attempt, _ in server.answers] == [2]
    assert _result(report) == "account B2"


async def _asked_by_the_retry(handle: WorkflowHandle) -> None:
    """Waits until the retry's update was accepted (the first attempt's was, before it died)."""
    for _ in range(300):
        history = await handle.fetch_history()
        accepted = [
            event
            for event in history.events
            if event.HasField("workflow_execution_update_accepted_event_attributes")
        ]
        if len(accepted) >= 2:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the retry never asked")
