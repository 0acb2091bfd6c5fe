"""The served agents as a local MCP client meets them (docs/mcp-serve.md): `turnkeeper mcp
--agents DIR --as NAME` started by the official Python client's stdio transport, in both eras,
its calls made by NAME (from the token file, or an operator without one); and a plain call over
HTTP whose progress notifications follow the turn's events until it ends."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

import turnkeeper
from tests.conftest import new_key, temporal_binary
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from tests.system.conftest import SystemStack
from tests.system.driving import connect_like
from tests.system.mcp_serving import (
    ERAS,
    Era,
    approve_over_http,
    served_client,
    write_agent,
    writer_folder,
)
from tests.system.test_http_api import add_token


@pytest.mark.parametrize("era", ERAS)
async def test_turnkeeper_mcp_serves_the_agents_over_stdio_as_the_named_identity(
    stack: SystemStack, tmp_path: Path, era: Era, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    worker = await stack.start_worker()
    carol, dave, tenant = f"carol-{key}", f"dave-{key}", f"acme-{key}"
    await add_token(stack, worker, carol, "--tenant", tenant)
    tokens = str(stack.tmp_path / "tokens.json")
    answers = {}
    for name, options in ((carol, ["--tokens", tokens]), (dave, [])):
        folder = tmp_path / name
        write_agent(folder, f"{key}-{name}", "helper")
        stack.fake.script(f"{key}-{name}", [fake.text(f"Answered for {name}.")])
        command = ["mcp", "--agents", str(folder), "--as", name, *options]
        answers[name] = await _call_over_stdio(worker.environment, command, era)
    client = await connect_like(worker, monkeypatch)
    reports = {}
    for name in (carol, dave):
        [turn] = [t async for t in client.list_workflows(f"StartedBy = '{name}'")]
        reports[name] = await turnkeeper.turn(client, turn.id).result()

    assert answers == {carol: f"Answered for {carol}.", dave: f"Answered for {dave}."}
    # carol as her token file says (a member of her tenant); dave, without one, an operator.
    assert (reports[carol].started_by, reports[carol].tenant) == (carol, tenant)
    assert (reports[dave].started_by, reports[dave].tenant) == (dave, None)


async def _call_over_stdio(environment: dict[str, str], command: list[str], era: Era) -> str:
    """Lists the tools of `turnkeeper <command>` over stdio and calls `helper`; its answer."""
    parameters = StdioServerParameters(
        command=temporal_binary("turnkeeper"), args=command, env=environment
    )
    mode = "legacy" if era == "legacy" else "auto"
    async with Client(parameters, mode=mode) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["helper"]
        result = await client.call_tool("helper", {"task": "Hello?"})
    assert not result.is_error, result
    text: str = result.content[0].text
    return text


@pytest.mark.parametrize("era", ERAS)
async def test_a_plain_call_sends_the_turns_events_as_progress(
    stack: SystemStack, tmp_path: Path, era: Era
) -> None:
    folder, alice = writer_folder(stack, tmp_path)
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    async with served_client(stack, folder, alice, era) as (served, client):
        call = asyncio.ensure_future(
            client.call_tool("writer", {"task": "Write."}, progress_callback=on_progress)
        )
        waits = await until(
            lambda: _said(progress, "approval_requested"), bool, "approval_requested as progress"
        )
        [turn] = [t async for t in stack.client.list_workflows(f"StartedBy = '{alice}'")]
        await approve_over_http(served, alice, turn.id)
        result = await call

    assert waits and not result.is_error and result.content[0].text == "Done."
    steps = [done for done, _ in progress]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    assert any("tool_call_started" in (message or "") for _, message in progress)


async def _said(progress: list[tuple[float, str | None]], kind: str) -> bool:
    return any(message and message.startswith(kind) for _, message in progress)
