"""Served calls as tasks (docs/mcp-serve.md, Tasks), with the official Python MCP client over
HTTP against `turnkeeper serve` as a process of its own: in 2025-11-25 (a `task` param,
`tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`) and in 2026-07-28 (the tasks
extension: `resultType: "task"`, `tasks/get` with the result, `tasks/cancel`); a task that waits
for a person is `input_required`; a cancelled task is its turn interrupted, with its partial
report; and a task is found again by a new `turnkeeper serve` after the first was killed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.conftest import SystemStack
from tests.system.mcp_serving import (
    MODERN,
    CreatedTask,
    Served,
    approval_agent,
    approve_over_http,
    audit_lines,
    legacy_task_call,
    mcp_client,
    polled,
    served_client,
    serving_agents,
    task_request,
    write_agent,
    writer_folder,
)
from tests.system.serving import serving


def status_is(*statuses: str) -> Any:
    return lambda task: task["status"] in statuses


async def test_a_2025_task_is_created_at_once_polled_listed_and_its_result_read(
    stack: SystemStack, tmp_path: Path
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    write_agent(folder, key, "helper")
    stack.fake.script(key, [fake.text("All done.")])
    alice = f"alice-{key}"
    async with served_client(stack, folder, alice, "legacy") as (_, client):
        assert client.server_capabilities.tasks is not None
        created = (await legacy_task_call(client, "helper", {"task": "Go."}))["task"]
        done = await polled(client, created["taskId"], status_is("completed"), "completed")
        result = await task_request(client, "tasks/result", taskId=created["taskId"])
        tasks = (await task_request(client, "tasks/list"))["tasks"]

    assert created["taskId"].startswith("mcp-helper-") and created["status"] == "working"
    assert created["ttl"] is None and created["pollInterval"] > 0
    assert done["taskId"] == created["taskId"] and done["statusMessage"]
    assert result["content"] == [{"type": "text", "text": "All done."}]
    assert result["isError"] is False
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": created["taskId"]}
    assert [task["taskId"] for task in tasks] == [created["taskId"]]
    assert tasks[0]["status"] == "completed"


async def test_a_2026_task_polls_through_an_approval_to_its_result(
    stack: SystemStack, tmp_path: Path
) -> None:
    folder, alice = writer_folder(stack, tmp_path)
    async with served_client(stack, folder, alice, MODERN, tasks=True) as (served, client):
        assert "io.modelcontextprotocol/tasks" in (client.server_capabilities.extensions or {})
        created = await client.session.call_tool(
            "writer", {"task": "Write it."}, allow_claimed=True
        )
        assert isinstance(created, CreatedTask)
        waiting = await polled(
            client, created.task_id, status_is("input_required"), "the approval to wait"
        )
        await approve_over_http(served, alice, created.task_id)
        done = await polled(client, created.task_id, status_is("completed"), "completed")

    assert created.status == "working" and created.task_id.startswith("mcp-writer-")
    assert waiting["inputRequests"] == {} and "write_file" in waiting["statusMessage"]
    assert done["result"]["content"] == [{"type": "text", "text": "Done."}]
    assert done["result"]["isError"] is False and done["ttlMs"] is None
    assert (served.worker.workspace / "out.md").read_text() == "hi"


async def test_cancelling_a_task_interrupts_its_turn_and_answers_its_partial_report(
    stack: SystemStack, tmp_path: Path
) -> None:
    legacy_key, modern_key = new_key(), new_key()
    folder = tmp_path / "agents"
    approval_agent(stack, folder, legacy_key, "writer")
    approval_agent(stack, folder, modern_key, "other-writer")
    alice = f"alice-{legacy_key}"
    async with serving_agents(stack, folder, (alice,)) as served:
        token = served.tokens[alice]
        async with mcp_client(served.mcp_url, token, "legacy") as client:
            created = (await legacy_task_call(client, "writer", {"task": "Write."}))["task"]
            legacy_id = created["taskId"]
            await polled(client, legacy_id, status_is("input_required"), "the approval")
            cancelled = await task_request(client, "tasks/cancel", taskId=legacy_id)
            ended = await polled(client, legacy_id, status_is("cancelled"), "cancelled")
            legacy_result = await task_request(client, "tasks/result", taskId=legacy_id)
        async with mcp_client(served.mcp_url, token, MODERN, tasks=True) as client:
            task = await client.session.call_tool(
                "other-writer", {"task": "W."}, allow_claimed=True
            )
            assert isinstance(task, CreatedTask)
            await polled(client, task.task_id, status_is("input_required"), "the approval")
            acknowledged = await task_request(client, "tasks/cancel", taskId=task.task_id)
            modern = await polled(client, task.task_id, status_is("cancelled"), "cancelled")

    assert cancelled["taskId"] == legacy_id and cancelled["status"] == "cancelled"
    assert ended["status"] == "cancelled"
    assert legacy_result["isError"] is True
    assert "interrupted" in legacy_result["content"][0]["text"]
    assert acknowledged == {"resultType": "complete", "_meta": acknowledged.get("_meta")}
    assert modern["result"]["isError"] is True
    assert "interrupted" in modern["result"]["content"][0]["text"]
    assert not (served.worker.workspace / "out.md").exists()
    cancels = [(a["turn"], a["status"]) for a in audit_lines(stack, "mcp:interrupt")]
    assert cancels == [(legacy_id, 200), (task.task_id, 200)]


async def test_a_task_is_found_by_a_new_server_after_the_first_was_killed(
    stack: SystemStack, tmp_path: Path
) -> None:
    folder, alice = writer_folder(stack, tmp_path)
    async with serving_agents(stack, folder, (alice,)) as first:
        token = first.tokens[alice]
        async with mcp_client(first.mcp_url, token, "legacy") as client:
            task_id = (await legacy_task_call(client, "writer", {"task": "Write."}))["task"][
                "taskId"
            ]
            await polled(client, task_id, status_is("input_required"), "the approval")
    # A server of its own: nothing of the first one's memory (its sessions) is left.
    async with serving(stack, first.worker, "--agents", str(folder), log_name="serve-2.log") as url:
        async with mcp_client(url + "/mcp", token, "legacy") as client:
            again = await task_request(client, "tasks/get", taskId=task_id)
            await approve_over_http(Served(stack, first.worker, url, first.tokens), alice, task_id)
            result = await task_request(client, "tasks/result", taskId=task_id)
        async with mcp_client(url + "/mcp", token, MODERN, tasks=True) as client:
            modern = await task_request(client, "tasks/get", taskId=task_id)

    assert again["status"] == "input_required"
    assert result["content"] == [{"type": "text", "text": "Done."}]
    assert modern["status"] == "completed" and modern["result"]["isError"] is False
