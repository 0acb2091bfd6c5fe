"""The per-agent approval cache on a real dev server: remembered approvals are found by one
batched lookup, a revoked one is gone, a missing cache means none, and the approvals survive
continue-as-new."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Worker
from turnkeeper.activities.runtime.approval_cache import ApprovalCacheActivities
from turnkeeper.contracts.approvals import (
    INVALID_STANDING_APPROVAL,
    QUERY_STANDING,
    SIGNAL_REMEMBER,
    ApprovalCacheInput,
    ApprovalCacheLookupInput,
    ApprovalCacheRememberInput,
    StandingApproval,
    approval_cache_id,
)
from turnkeeper.contracts.search_attributes import AGENT_ID
from turnkeeper.workflows.approvals.approval_cache_workflow import ApprovalCacheWorkflow

from turnkeeper.client.approvals import list_standing, revoke

DECIDED_AT = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)


@dataclass
class Cache:
    """One agent's cache, reached through the activities a turn uses and the client helpers."""

    client: Client
    agent_id: str
    activities: ApprovalCacheActivities
    task_queue: str

    @property
    def handle(self) -> WorkflowHandle:
        return self.client.get_workflow_handle(approval_cache_id(self.agent_id))

    def _env(self) -> ActivityEnvironment:
        env = ActivityEnvironment()
        env.info = dataclasses.replace(env.info, task_queue=self.task_queue)
        return env

    async def remember(self, tool: str, approver: str = "alice", reason: str = "fine") -> None:
        approval = ApprovalCacheRememberInput(
            agent_id=self.agent_id, tool=tool, approver=approver, reason=reason, at=DECIDED_AT
        )
        await self._env().run(self.activities.approval_cache_remember, approval)

    async def lookup(self, tools: list[str]) -> list[str]:
        question = ApprovalCacheLookupInput(agent_id=self.agent_id, tools=tools)
        result = await self._env().run(self.activities.approval_cache_lookup, question)
        return result.approved


@pytest.fixture
async def cache(client: Client) -> AsyncIterator[Cache]:
    task_queue = f"tq-{uuid.uuid4()}"
    activities = ApprovalCacheActivities(client)
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[ApprovalCacheWorkflow],
        activities=[activities.approval_cache_lookup, activities.approval_cache_remember],
    ):
        yield Cache(client, f"agent-{uuid.uuid4().hex[:8]}", activities, task_queue)


async def current_details(handle: WorkflowHandle) -> str:
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    return metadata.current_details


async def test_no_cache_yet_means_no_standing_approvals(cache: Cache) -> None:
    assert await cache.lookup(["write_file"]) == []
    assert await cache.lookup([]) == []
    assert await list_standing(cache.client, cache.agent_id) == []
    assert await revoke(cache.client, cache.agent_id, "write_file", "bob") is False


async def test_a_remembered_approval_is_found_by_one_batched_lookup(cache: Cache) -> None:
    await cache.remember("write_file", reason="summaries only")
    await cache.remember("send_mail", approver="bob")
    asked = ["send_mail", "read_file", "write_file", "send_mail"]
    assert await cache.lookup(asked) == ["send_mail", "write_file"]
    assert await list_standing(cache.client, cache.agent_id) == [
        StandingApproval(tool="send_mail", approver="bob", reason="fine", at=DECIDED_AT),
        StandingApproval(
            tool="write_file", approver="alice", reason="summaries only", at=DECIDED_AT
        ),
    ]
    description = await cache.handle.describe()
    assert description.typed_search_attributes.get(AGENT_ID) == cache.agent_id
    assert await description.static_summary() == f"Standing approvals of agent {cache.agent_id}"
    details = await current_details(cache.handle)
    assert "`write_file`, approved by alice at 2026-01-02T03:04+00:00: summaries only" in details


async def test_a_revoked_approval_is_gone(cache: Cache) -> None:
    await cache.remember("write_file")
    assert await revoke(cache.client, cache.agent_id, "write_file", "bob") is True
    assert await cache.lookup(["write_file"]) == []
    assert await list_standing(cache.client, cache.agent_id) == []
    assert await revoke(cache.client, cache.agent_id, "write_file", "bob") is False
    assert "None: every call that needs approval asks a human." in await current_details(
        cache.handle
    )


async def test_a_cache_that_was_terminated_stands_for_nothing(cache: Cache) -> None:
    await cache.remember("write_file")
    await cache.handle.terminate("operator reset")
    assert await cache.lookup(["write_file"]) == []
    await cache.remember("write_file")  # a new cache starts on the next `remember: true`
    assert await cache.lookup(["write_file"]) == ["write_file"]


async def test_the_approvals_survive_continue_as_new(cache: Cache) -> None:
    first = await cache.client.start_workflow(
        ApprovalCacheWorkflow.run,
        ApprovalCacheInput(agent_id=cache.agent_id, max_history_events=12),
        id=approval_cache_id(cache.agent_id),
        task_queue=cache.task_queue,
    )
    tools = [f"tool_{n}" for n in range(6)]
    for tool in tools:
        await cache.remember(tool)
        assert await cache.lookup([tool]) == [tool]
    await revoke(cache.client, cache.agent_id, "tool_0", "bob")
    description = await cache.handle.describe()
    assert description.run_id != first.result_run_id  # it did continue as new
    assert await cache.lookup(tools) == tools[1:]
    standing = await cache.handle.query(QUERY_STANDING, result_type=list[StandingApproval])
    assert [approval.tool for approval in standing] == tools[1:]
    assert {approval.at for approval in standing} == {DECIDED_AT}


async def test_a_remember_signal_that_does_not_fit_is_dropped(cache: Cache) -> None:
    await cache.remember("write_file")
    await cache.handle.signal(SIGNAL_REMEMBER, {"tool": "../../etc", "approver": "eve"})
    await cache.handle.signal(SIGNAL_REMEMBER, {"tool": "read_file", "colour": "red"})
    assert await cache.lookup(["write_file", "../../etc", "read_file"]) == ["write_file"]


async def test_remembering_a_name_no_tool_can_have_is_refused(cache: Cache) -> None:
    with pytest.raises(ApplicationError) as caught:
        await cache.remember("*")
    assert caught.value.type == INVALID_STANDING_APPROVAL and caught.value.non_retryable


async def test_no_message_is_lost_while_the_cache_continues_as_new(cache: Cache) -> None:
    first = await cache.client.start_workflow(
        ApprovalCacheWorkflow.run,
        ApprovalCacheInput(agent_id=cache.agent_id, max_history_events=15),
        id=approval_cache_id(cache.agent_id),
        task_queue=cache.task_queue,
    )
    await cache.remember("keep")
    for round_ in range(3):
        # Lookups and remembers at once, so some arrive while a run is handing over to the next.
        results = await asyncio.gather(
            *(cache.lookup(["keep", f"other_{n}"]) for n in range(10)),
            *(cache.remember(f"tool_{round_}_{n}") for n in range(3)),
        )
        assert results[:10] == [["keep"]] * 10
    standing = await list_standing(cache.client, cache.agent_id)
    assert len(standing) == 1 + 3 * 3
    assert (await cache.handle.describe()).run_id != first.result_run_id
