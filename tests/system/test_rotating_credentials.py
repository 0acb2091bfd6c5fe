"""Credentials that rotate, in `python worker.py` as users start it: the Anthropic key from
`ANTHROPIC_API_KEY_FILE` and an HTTP MCP server's token from `bearer` in `TURNKEEPER_MCP_CONFIG`,
both renewed by "an outside agent" between two steps of a turn. The turn finishes on the same
worker process, and neither secret is in the worker's log or the turn's history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as anthropic
from tests.fakes.anthropic_replies import JsonDict, Reply
from tests.support.history_facts import decoded_payloads
from tests.support.mcp_http_process import HttpServerProcess
from tests.system.conftest import SystemStack
from tests.system.driving import agent, connect_like, history, task

OLD_KEY, NEW_KEY = "sk-sys-old-5151515151", "sk-sys-new-6262626262"
OLD_TOKEN, NEW_TOKEN = "tok-sys-old-7373737373", "tok-sys-new-8484848484"


async def test_a_worker_process_follows_a_key_and_a_token_rotated_mid_turn(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_file, token_file, server_file = (tmp_path / n for n in ("key", "token", "server-token"))

    def renew(api_key: str, token: str) -> None:
        key_file.write_text(api_key + "\n")
        token_file.write_text(token + "\n")
        server_file.write_text(token + "\n")

    renew(OLD_KEY, OLD_TOKEN)
    server = HttpServerProcess(bearer_file=server_file)
    await server.start()
    try:
        config = tmp_path / "mcp.json"
        web = {"url": server.url, "bearer": {"file": str(token_file)}}
        config.write_text(json.dumps({"servers": {"web": web}}))
        worker = await stack.start_worker(
            env={
                "ANTHROPIC_API_KEY": "",
                "ANTHROPIC_API_KEY_FILE": str(key_file),
                "TURNKEEPER_MCP_CONFIG": str(config),
            }
        )
        script = new_key()

        def renew_then_call(body: JsonDict) -> Reply:
            renew(NEW_KEY, NEW_TOKEN)
            stack.fake.require_key(script, NEW_KEY)
            return anthropic.tool_calls(("mcp__web__add", {"a": 40, "b": 2}))

        stack.fake.script(script, [renew_then_call, anthropic.text("It is 42.")])
        stack.fake.require_key(script, OLD_KEY)
        client = await connect_like(worker, monkeypatch)
        handle = await turnkeeper.start_turn(
            client, agent=agent(script, tools=["mcp__web__add"]), task=task(script)
        )
        report = await handle.result()
        refused_mcp_requests = await server.refusals()
    finally:
        await server.kill()

    assert (report.output, report.tool_calls, report.llm_calls) == ("It is 42.", 1, 2)
    sent = [stack.fake.sent_key(request) for request in stack.fake.requests_for(script)]
    assert sent == [OLD_KEY, OLD_KEY, NEW_KEY] and refused_mcp_requests == 1
    renewed = sorted(line["source"] for line in worker.events("credential_renewed"))
    assert renewed == ["ANTHROPIC_API_KEY_FILE", "servers.web.bearer"]
    shown = await history(stack, handle.id)
    written = worker.log_path.read_text() + json.dumps(shown) + "".join(decoded_payloads(shown))
    assert "mcp__web__add" in written
    assert not [s for s in (OLD_KEY, NEW_KEY, OLD_TOKEN, NEW_TOKEN) if s in written]
