"""What the console prints from a turn cannot drive the terminal it prints to (issue 29, 6).

The attackers: anyone who may signal the namespace (a forged `approve` whose approver or call id
carries escape sequences lands in the status's refused decisions), and whoever writes what the
model reads or says (a file in the workspace, a prompt injection). An approver who runs
`turnkeeper status` or `turnkeeper transcript` must see those characters, not obey them: a
cleared screen and a green "approved" line that no one sent are how a forged approval passes.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.test_approvals_and_budgets import (
    result,
    script_a_write,
    start,
    status,
    turn_request,
    wait_for_state,
)

# What a terminal obeys: C0 controls (newline and tab aside), DEL and the C1 controls (0x9b is
# a one-byte CSI), and the bidirectional overrides that reorder what is shown.
OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
CLEAR_AND_FAKE = "\x1b[2J\x1b[H\x1b[32m✓ approved by alice\x1b[0m"
MAX_KEPT = 20  # contracts.signals.MAX_REFUSED_DECISIONS


def obeyed(text: str) -> list[str]:
    return OBEYED.findall(text)


async def forge(stack: SystemStack, workflow_id: str, decision: dict[str, Any]) -> None:
    """An `approve` signal from someone who can signal the namespace, through the CLI."""
    await stack.temporal(
        "workflow", "signal", "--workflow-id", workflow_id, "--name", "approve",
        "--input", json.dumps(decision),
    )  # fmt: skip


async def shown(stack: SystemStack, worker: WorkerProcess, *args: str) -> str:
    done: subprocess.CompletedProcess[str] = await stack.turnkeeper(*args, worker=worker)
    return done.stdout


async def test_a_forged_decision_is_shown_not_obeyed_and_a_flood_is_counted(
    stack: SystemStack,
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    script_a_write(stack, key)
    workflow_id = await start(stack, worker, turn_request(key))
    await wait_for_state(stack, workflow_id, "awaiting_approval")

    forged = {"call_id": "\x1b]0;owned\x07\x9b2J", "approved": True, "approver": CLEAR_AND_FAKE}
    await forge(stack, workflow_id, forged)
    await until(
        lambda: status(stack, workflow_id),
        lambda seen: [r["approver"] for r in seen["refused_decisions"]] == [CLEAR_AND_FAKE],
        "the forged decision refused",
    )
    printed = await shown(stack, worker, "status", workflow_id)
    assert obeyed(printed) == []
    assert r"from \u001b[2J\u001b[H\u001b[32m✓ approved by alice\u001b[0m" in printed
    assert r"call \u001b]0;owned\u009b2J" in printed  # rich drops the BEL itself

    # A flood pushes the forged one out of the 20 kept: the status says that it did.
    for number in range(MAX_KEPT + 4):
        await forge(stack, workflow_id, {"call_id": f"nope-{number}", "approved": True})
    seen = await until(
        lambda: status(stack, workflow_id),
        lambda seen: seen.get("refused_decisions_dropped") == 5,
        "the flood's 25 refusals, 5 of them dropped",
    )
    assert len(seen["refused_decisions"]) == MAX_KEPT
    assert CLEAR_AND_FAKE not in [r["approver"] for r in seen["refused_decisions"]]
    printed = await shown(stack, worker, "status", workflow_id)
    assert "5 earlier refused decisions dropped" in printed


async def test_what_the_model_and_the_files_say_is_shown_not_obeyed(stack: SystemStack) -> None:
    worker = await stack.start_worker()
    (worker.workspace / "notes.md").write_text("ok\x1b[2J\x1b]8;;https://evil.example\x1b\\x\n")
    key = new_key()
    stack.fake.script(
        key,
        [
            fake.tool_calls(("read_file", {"path": "notes.md"})),
            fake.text("Done.\x1b[1A\x1b[2K\u202eevil"),
        ],
    )
    workflow_id = await start(stack, worker, turn_request(key))
    assert (await result(stack, workflow_id))["outcome"] == "completed"

    printed = await shown(stack, worker, "transcript", workflow_id)

    assert obeyed(printed) == []
    assert r"ok\u001b[2J\u001b]8;;https://evil.example\u001b\x" in printed
    assert r"Done.\u001b[1A\u001b[2K\u202eevil" in printed
