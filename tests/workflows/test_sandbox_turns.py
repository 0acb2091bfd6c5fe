"""`run_python` and `run_shell` in turns: the folder carries from call to call through the
content store, each turn has its own, the report lists its files, `require_approval` holds a
call with its code for the approver, the output streams as `tool_output` events, and a worker
without bubblewrap refuses the turn saying how to install it. The sandbox itself (isolation,
limits, attacks): tests/activities/test_sandbox_attacks.py.
"""

from __future__ import annotations

import json
import shutil

import pytest
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.turn import AgentReport

from turnkeeper.client.errors import InvalidTurnRequest
from turnkeeper.testing import ScriptedModel, call, reply
from turnkeeper.testing.pytest_plugin import EnvironmentFactory

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

SANDBOX = {"tools": ["run_python", "run_shell"], "sandbox": {"timeout_s": 10, "memory_mb": 256}}


def _results(report: AgentReport) -> list[dict]:
    return [
        json.loads(block.text())
        for message in report.messages
        for block in message.content
        if isinstance(block, ToolResultBlock) and not block.is_error
    ]


async def test_files_carry_from_call_to_call_and_turns_never_share_them(
    turn_env: EnvironmentFactory,
) -> None:
    writer = ScriptedModel(
        [
            [call("run_python", code="open('out.txt','w').write(open('data/in.csv').read()*2)")],
            [call("run_shell", command="cat out.txt; ls")],
            reply("done"),
        ]
    )
    prying = ScriptedModel([[call("run_shell", command="ls -a; cat out.txt")], reply("done")])
    async with turn_env(model=writer) as env:
        (env.workspace / "data").mkdir()
        (env.workspace / "data" / "in.csv").write_text("a,b\n")
        agent = {**SANDBOX, "sandbox": {**SANDBOX["sandbox"], "files": ["data"]}}
        first = await (await env.start_turn("write", agent=agent)).result()
        second = await (await env.start_turn("pry", model=prying, agent=SANDBOX)).result()

    wrote, read = _results(first)
    assert (wrote["exit_code"], wrote["files_changed"]) == (0, ["out.txt"])
    assert read["stdout"] == "a,b\na,b\ndata\nout.txt\n"
    assert first.sandbox is not None and first.sandbox.files == ["data/in.csv", "out.txt"]
    [pried] = _results(second)
    assert pried["stdout"] == ".\n..\n" and "No such file" in pried["stderr"]
    assert pried["exit_code"] != 0 and second.sandbox is not None and second.sandbox.files == []


async def test_require_approval_shows_the_code_and_output_streams_as_it_comes(
    turn_env: EnvironmentFactory,
) -> None:
    code = "import sys\nprint(6*7, flush=True)\nprint('careful', file=sys.stderr)"
    model = ScriptedModel([[call("run_python", code=code)], reply("done")])
    async with turn_env(model=model) as env:
        handle = await env.start_turn(
            "compute",
            agent={**SANDBOX, "stream": True},
            task={"constraints": {"require_approval": ["run_python"]}},
        )
        pending = await handle.wait_for_approval(tool="run_python")
        assert pending.input == {"code": code}
        await handle.approve(pending.call_id)
        report = await handle.result()
        events = [event async for event in handle.events()]
    [ran] = _results(report)
    assert (ran["stdout"], ran["stderr"]) == ("42\n", "careful\n")
    live = [(e.call_id, e.stream, e.text) for e in events if e.kind == "tool_output"]
    assert sorted(live) == [
        (pending.call_id, "stderr", "careful\n"),
        (pending.call_id, "stdout", "42\n"),
    ]


async def test_a_worker_without_bubblewrap_refuses_the_turn_saying_how_to_install_it(
    turn_env: EnvironmentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TURNKEEPER_SANDBOX_BWRAP", "/nonexistent/bwrap")
    model = ScriptedModel([[call("run_python", code="print(1)")], reply("done")])
    async with turn_env(model=model) as env:
        handle = await env.start_turn("compute", agent=SANDBOX)
        with pytest.raises(InvalidTurnRequest) as refused:
            await handle.result()
    assert "has no bubblewrap" in str(refused.value)
    assert "apt-get install bubblewrap" in str(refused.value)
