"""The sandbox folder outlives its worker: a `python worker.py` killed with -9 between two
`run_python`/`run_shell` calls, and a new worker that shares only the content store (not the
workspace, not a folder) runs the second call, which reads the file the first call wrote; then
`turnkeeper sandbox get` prints that file as a user would fetch it.

The kill lands while the second call waits for approval, so no call is in flight (a kill during
a call is the chaos matrix's business, as in test_worker_crash.py)."""

from __future__ import annotations

import json
import shutil
import signal

import pytest

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.conftest import SystemStack
from tests.system.steps import result, start, turn_request, wait_for_state

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

WRITE = ("run_python", {"code": "open('notes.txt', 'w').write('written before the crash\\n')"})
READ = ("run_shell", {"command": "cat notes.txt"})


async def test_a_second_call_on_a_new_worker_reads_what_the_first_wrote(stack: SystemStack) -> None:
    first = await stack.start_worker()
    key = new_key()
    stack.fake.script(key, [fake.tool_calls(WRITE), fake.tool_calls(READ), fake.text("Read it.")])
    request = turn_request(key, require_approval=["run_shell"])
    request["agent"]["tools"] = ["run_python", "run_shell"]
    workflow_id = await start(stack, first, request)
    waiting = await wait_for_state(stack, workflow_id, "awaiting_approval")

    assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    shared = {"TURNKEEPER_DATA_DIR": first.environment["TURNKEEPER_DATA_DIR"]}
    second = await stack.start_worker(task_queue=first.task_queue, env=shared)
    assert second.workspace != first.workspace
    decision = {"call_id": waiting["pending"][0]["call_id"], "approved": True, "approver": "ops"}
    await stack.temporal(
        "workflow", "signal", "--workflow-id", workflow_id, "--name", "approve",
        "--input", json.dumps(decision),
    )  # fmt: skip

    report = await result(stack, workflow_id)
    assert (report["outcome"], report["tool_calls"]) == ("completed", 2)
    read = json.loads(report["messages"][4]["content"][0]["content"])
    assert (read["exit_code"], read["stdout"]) == (0, "written before the crash\n")
    assert report["sandbox"]["files"] == ["notes.txt"]
    fetched = await stack.turnkeeper("sandbox", "get", workflow_id, "notes.txt", worker=second)
    assert fetched.stdout == "written before the crash\n"
