"""Bad input to served agents (docs/mcp-serve.md, Errors), sent by the official Python MCP
client to `turnkeeper serve --agents` in both eras: each is a clear MCP error (a JSON-RPC error,
or a tool result with `isError` where the spec asks the caller's model to correct it), and none
starts a turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, METHOD_NOT_FOUND, MISSING_REQUIRED_CLIENT_CAPABILITY

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.conftest import SystemStack
from tests.system.mcp_serving import (
    ERAS,
    MODERN,
    Era,
    Served,
    audit_lines,
    legacy_task_call,
    mcp_client,
    polled,
    serving_agents,
    task_request,
    write_agent,
)

BAD_ARGUMENTS: list[tuple[dict[str, Any] | None, str]] = [
    (None, "missing the required argument 'task'"),
    ({}, "missing the required argument 'task'"),
    ({"task": 7}, "'task' must be a string, got int"),
    ({"task": ["a"]}, "'task' must be a string, got list"),
    ({"task": "  "}, "'task' is empty"),
    ({"task": "Go.", "budget": 100}, "unexpected argument(s) 'budget'"),
]


async def turns_of(served: Served, name: str) -> list[dict[str, Any]]:
    """`GET /v1/turns` as `name`: the turns it started."""
    headers = {"Authorization": f"Bearer {served.tokens[name]}"}
    async with httpx.AsyncClient(base_url=served.url, headers=headers) as http:
        listed: list[dict[str, Any]] = (await http.get("/v1/turns")).json()
        return listed


async def refused(call: Any) -> MCPError:
    with pytest.raises(MCPError) as raised:
        await call
    return raised.value


@pytest.mark.parametrize("era", ERAS)
async def test_a_call_with_a_bad_name_or_arguments_is_refused_and_starts_nothing(
    stack: SystemStack, tmp_path: Path, era: Era
) -> None:
    key, priced = new_key(), new_key()
    folder = tmp_path / "agents"
    write_agent(folder, key, "helper")
    price = {"input_per_mtok": 1, "output_per_mtok": 2}
    write_agent(folder, priced, "priced", price=price)
    alice = f"alice-{key}"
    async with serving_agents(stack, folder, (alice,)) as served:
        async with mcp_client(served.mcp_url, served.tokens[alice], era) as client:
            unknown = await refused(client.call_tool("nobody", {"task": "Go."}))
            results = [await client.call_tool("helper", args) for args, _ in BAD_ARGUMENTS]
            member_price = await refused(client.call_tool("priced", {"task": "Go."}))
            legacy = await _legacy_task_refusals(client) if era == "legacy" else []
        started = await turns_of(served, alice)

    assert unknown.code == INVALID_PARAMS and "Unknown tool: 'nobody'" in unknown.message
    assert "helper" in unknown.message and "priced" in unknown.message
    for result, (_, words) in zip(results, BAD_ARGUMENTS, strict=True):
        assert result.is_error and words in result.content[0].text
    assert member_price.code == INVALID_PARAMS
    assert "only an operator may set a price" in member_price.message
    said = ["Unknown tool: 'nobody'"] + [words for _, words in BAD_ARGUMENTS[1:]]
    for error, words in zip(legacy, said if era == "legacy" else [], strict=True):
        assert error.code == INVALID_PARAMS and words in error.message
    # Nothing started: no turn of the caller's, no request to the model.
    assert started == []
    assert stack.fake.requests_for(key) == [] and stack.fake.requests_for(priced) == []


async def _legacy_task_refusals(client: Client) -> list[MCPError]:
    """The same bad calls, task-augmented (2025-11-25): no tool result to say it in."""
    calls = [("nobody", {"task": "Go."})] + [
        ("helper", args or {}) for args, _ in BAD_ARGUMENTS[1:]
    ]
    return [await refused(legacy_task_call(client, name, args)) for name, args in calls]


async def test_a_task_id_that_is_no_turn_or_another_callers_is_not_found(
    stack: SystemStack, tmp_path: Path
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    write_agent(folder, key, "helper")
    stack.fake.script(key, [fake.text("Bob's answer.")])
    alice, bob = f"alice-{key}", f"bob-{key}"
    async with serving_agents(stack, folder, (alice,), (bob,)) as served:
        async with mcp_client(served.mcp_url, served.tokens[bob], "legacy") as client:
            bobs = (await legacy_task_call(client, "helper", {"task": "Go."}))["task"]["taskId"]
            await polled(client, bobs, lambda task: task["status"] == "completed", "bob's turn")
        answers: dict[tuple[str, str, str], MCPError] = {}
        for era in ERAS:
            async with mcp_client(
                served.mcp_url, served.tokens[alice], era, tasks=era == MODERN
            ) as client:
                methods = ["tasks/get", "tasks/cancel"]
                methods += ["tasks/result"] if era == "legacy" else []
                for method in methods:
                    for task_id in ("mcp-helper-nosuchturn", bobs):
                        answers[era, method, task_id] = await refused(
                            task_request(client, method, taskId=task_id)
                        )
        async with mcp_client(served.mcp_url, served.tokens[bob], MODERN) as client:
            undeclared = await refused(task_request(client, "tasks/get", taskId=bobs))
            # The 2025-11-25 methods that the 2026 extension dropped.
            dropped = [
                await refused(task_request(client, "tasks/result", taskId=bobs)),
                await refused(task_request(client, "tasks/list")),
            ]
        alices = await turns_of(served, alice)

    assert len(answers) == 10
    for (_, _, task_id), error in answers.items():
        # The same words for a turn that does not exist and for one that is not alice's.
        assert error.code == INVALID_PARAMS, error
        assert error.message == f"Failed to retrieve task: Task not found: {task_id!r}"
    assert undeclared.code == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert [error.code for error in dropped] == [METHOD_NOT_FOUND, METHOD_NOT_FOUND]
    refusals = [(a["identity"], a["status"]) for a in audit_lines(stack, "mcp:interrupt")]
    assert refusals == [(alice, 404)] * 4
    assert alices == []
