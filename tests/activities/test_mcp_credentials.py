"""An MCP server's bearer token rotated under a running worker: the demo server over streamable
HTTP, run with `--bearer-file` so that it checks every request against a file the test rewrites,
and the worker's `bearer` source (a file or a command) that an outside agent would renew."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.credentials import CredentialSource
from turnkeeper.activities.mcp.config import HttpServerConfig, McpConfig
from turnkeeper.activities.mcp.mcp_activity import McpActivities
from turnkeeper.contracts.activity_io import ToolCallResult
from turnkeeper.contracts.mcp import McpCallInput

from tests.support.mcp_http_process import HttpServerProcess
from turnkeeper.payloads.content_store import LocalFolderStore

# Prints the file named by its first argument and notes each run in the second, so that a test
# counts how often the worker asked for the token.
_PRINT_TOKEN = (
    "import pathlib, sys; "
    "pathlib.Path(sys.argv[2]).open('a').write('run\\n'); "
    "print(pathlib.Path(sys.argv[1]).read_text())"
)


class Rotation:
    """The server's token file and the worker's, as an outside agent keeps them in step."""

    def __init__(self, folder: Path) -> None:
        self.server_file = folder / "server-token"
        self.worker_file = folder / "worker-token"
        self.runs_file = folder / "command-runs"

    def rotate(self, token: str, *, worker_gets: str | None = None) -> None:
        self.server_file.write_text(token + "\n")
        self.worker_file.write_text((worker_gets or token) + "\n")

    def command(self) -> CredentialSource:
        argv = [sys.executable, "-c", _PRINT_TOKEN, str(self.worker_file), str(self.runs_file)]
        return CredentialSource(command=argv)

    def command_runs(self) -> int:
        return len(self.runs_file.read_text().splitlines()) if self.runs_file.exists() else 0


@pytest.fixture
async def rotation(tmp_path: Path) -> AsyncIterator[tuple[Rotation, HttpServerProcess]]:
    tokens = Rotation(tmp_path)
    tokens.rotate("token-one-aaaaaaaa")
    process = HttpServerProcess(bearer_file=tokens.server_file)
    await process.start()
    try:
        yield tokens, process
    finally:
        await process.kill()


@pytest.fixture
async def make_activities(tmp_path: Path) -> AsyncIterator[Any]:
    opened: list[McpActivities] = []

    def make(url: str, bearer: CredentialSource) -> McpActivities:
        server = HttpServerConfig(name="web", url=url, bearer=bearer, connect_timeout_s=5.0)
        store = LocalFolderStore(tmp_path / "store")
        # A long idle time: each call goes straight to the open connection, so the 401 it meets
        # is the call's own, not a probe's.
        opened.append(McpActivities(McpConfig(servers={"web": server}), store, environ={}))
        return opened[-1]

    yield make
    for activities in opened:
        await activities.aclose()


async def call(activities: McpActivities, tool: str, call_id: str = "toolu_1") -> ToolCallResult:
    request = McpCallInput(turn_id="turn-1", call_id=call_id, name=f"mcp__web__{tool}", input={})
    return await ActivityEnvironment().run(activities.mcp_call_tool, request)


async def authorization_sent(activities: McpActivities, call_id: str = "toolu_1") -> str:
    result = await call(activities, "whoami", call_id)
    assert not result.is_error, result.content
    return str(json.loads(result.content)["authorization"])


async def test_a_token_file_rotated_mid_run_is_read_again_after_one_401(
    rotation: tuple[Rotation, HttpServerProcess], make_activities: Any
) -> None:
    tokens, process = rotation
    activities = make_activities(process.url, CredentialSource(file=tokens.worker_file))
    with structlog.testing.capture_logs() as logs:
        assert await authorization_sent(activities) == "Bearer token-one-aaaaaaaa"
        tokens.rotate("token-two-bbbbbbbb")
        assert await authorization_sent(activities, "toolu_2") == "Bearer token-two-bbbbbbbb"
    assert await process.refusals() == 1
    renewed = [entry for entry in logs if entry["event"] == "credential_renewed"]
    assert [(e["source"], e["generation"]) for e in renewed] == [("servers.web.bearer", 2)]
    assert "token-" not in repr(logs) and "token-" not in repr(activities)


async def test_calls_that_meet_the_rotation_together_run_the_command_once(
    rotation: tuple[Rotation, HttpServerProcess], make_activities: Any
) -> None:
    tokens, process = rotation
    activities = make_activities(process.url, tokens.command())
    assert await authorization_sent(activities) == "Bearer token-one-aaaaaaaa"
    assert tokens.command_runs() == 1
    tokens.rotate("token-two-bbbbbbbb")
    answers = await asyncio.gather(
        *(authorization_sent(activities, f"toolu_{k}") for k in range(2, 8))
    )
    assert answers == ["Bearer token-two-bbbbbbbb"] * 6
    # Six calls refused together, one new read of the token between them.
    assert tokens.command_runs() == 2
    assert 1 <= await process.refusals() <= 6


async def test_a_second_401_fails_the_call_as_a_refused_call_does(
    rotation: tuple[Rotation, HttpServerProcess], make_activities: Any
) -> None:
    tokens, process = rotation
    activities = make_activities(process.url, CredentialSource(file=tokens.worker_file))
    assert await authorization_sent(activities) == "Bearer token-one-aaaaaaaa"
    tokens.rotate("token-two-bbbbbbbb", worker_gets="token-stale-cccccccc")
    with structlog.testing.capture_logs() as logs:
        refused = await call(activities, "whoami", "toolu_2")
    assert refused.is_error
    assert "refused the call of 'whoami'" in refused.content
    # Read again once (the stale value), and not again for the retry's own 401.
    assert [e["event"] for e in logs if e["event"].startswith("credential_")] == [
        "credential_renewed"
    ]
    # The call's 401, then the one retry with the value read again: no third attempt.
    assert await process.refusals() == 2
    assert "token-" not in refused.content + repr(logs)


async def test_a_token_file_gone_at_renewal_fails_the_call_and_says_which_entry(
    rotation: tuple[Rotation, HttpServerProcess], make_activities: Any
) -> None:
    tokens, process = rotation
    activities = make_activities(process.url, CredentialSource(file=tokens.worker_file))
    assert await authorization_sent(activities) == "Bearer token-one-aaaaaaaa"
    tokens.rotate("token-two-bbbbbbbb")
    tokens.worker_file.unlink()
    with structlog.testing.capture_logs() as logs:
        refused = await call(activities, "whoami", "toolu_2")
    assert refused.is_error
    unreadable = [entry for entry in logs if entry["event"] == "credential_unreadable"]
    assert [entry["source"] for entry in unreadable] == ["servers.web.bearer"]
    assert "servers.web.bearer: file" in unreadable[0]["error"]
    assert "does not exist" in unreadable[0]["error"]
    assert await process.refusals() == 1
    # Once the agent has written the new token, the next call goes through.
    tokens.rotate("token-two-bbbbbbbb")
    assert await authorization_sent(activities, "toolu_3") == "Bearer token-two-bbbbbbbb"


async def test_a_token_source_gone_before_the_first_connection_fails_the_call_naming_it(
    rotation: tuple[Rotation, HttpServerProcess], make_activities: Any
) -> None:
    tokens, process = rotation
    # Checked at load in a worker; gone by the time the first call connects.
    tokens.worker_file.unlink()
    activities = make_activities(process.url, CredentialSource(file=tokens.worker_file))
    result = await call(activities, "whoami")
    assert result.is_error
    assert "MCP server 'web' is unavailable" in result.content
    assert f"servers.web.bearer: file {str(tokens.worker_file)!r} does not exist" in result.content
    assert await process.refusals() == 0
