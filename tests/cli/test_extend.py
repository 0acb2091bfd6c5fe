"""`turnkeeper extend`, `turnkeeper pending` and `status` for a turn waiting in state
`awaiting_budget`, the `temporal workflow update execute` form, and the client's
`TurnHandle.extend_budget`."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from temporalio.client import WorkflowHandle
from turnkeeper.contracts.decision_signing import public_key_line
from turnkeeper.contracts.names import QUERY_STATUS
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import TurnRunner, new_key, scripted_request, temporal_binary
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import script_marker
from tests.support.console_runs import (  # noqa: F401 (restore_logging: an autouse fixture)
    address_of,
    invoke,
    restore_logging,
    shown_by_command,
    until_shown,
)
from tests.workflows.test_budget_extension import wait_for_budget_request
from turnkeeper.client.client import TurnHandle
from turnkeeper.client.errors import DecisionRefused

LIST = ("list_files", {"path": "."})


async def out_of_iterations(turns: TurnRunner, **agent: Any) -> WorkflowHandle:
    """A turn that used its one iteration and waits for more."""
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(LIST), fake.text("Done.")])
    request = scripted_request(
        key,
        agent={"max_iterations": 1, **agent},
        task={"constraints": {"on_budget_exhausted": "pause"}},
    )
    handle = await turns.start(request)
    await wait_for_budget_request(handle)
    return handle


async def test_pending_lists_the_turn_and_extend_lets_it_finish(turns: TurnRunner) -> None:
    handle = await out_of_iterations(turns)
    address = address_of(turns.client)

    listed = await _pending_until_listed(handle.id, address)
    status = await invoke("status", handle.id, *address)
    extended = await invoke(
        "extend", handle.id, "--iterations", "2", "--reason", "go on", "--approver", "alice",
        *address,
    )  # fmt: skip

    assert f"turnkeeper extend {handle.id} --iterations 5" in listed.stdout
    update = f"temporal workflow update execute --workflow-id {handle.id} --name extend_budget"
    assert update in listed.stdout
    assert "awaiting_budget" in status.stdout and "reached max_iterations=1" in status.stdout
    assert extended.exit_code == 0, extended.output
    assert f"extended the iterations budget of {handle.id} (request 1)" in extended.stdout
    assert "3 iterations" in extended.stdout
    report: AgentReport = await handle.result()
    [extension] = report.budget_extensions
    assert (extension.iterations, extension.approver, extension.reason) == (2, "alice", "go on")


async def test_extend_refuses_plainly(turns: TurnRunner) -> None:
    handle = await out_of_iterations(turns, approvers=["alice"])
    address = address_of(turns.client)

    nothing = await invoke("extend", handle.id, *address)
    negative = await invoke("extend", handle.id, "--cost-usd", "-1", *address)
    wrong = await invoke("extend", handle.id, "--time-ms", "100", "--approver", "alice", *address)
    outsider = await invoke("extend", handle.id, "--iterations", "1", "--approver", "eve", *address)

    assert nothing.exit_code == 2 and "at least one positive amount" in nothing.stderr
    assert negative.exit_code == 2 and "--cost-usd: Input should be greater than 0" in (
        negative.stderr
    )
    assert wrong.exit_code == 1
    assert "The turn refused the extension: the turn waits for more iterations" in wrong.stderr
    assert outsider.exit_code == 1 and "'eve' may not extend budgets" in outsider.stderr
    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert status.state == "awaiting_budget" and not status.budget_extensions
    await handle.terminate("test over")
    ended = await invoke("extend", handle.id, "--iterations", "1", *address)
    assert ended.exit_code == 1, ended.output


async def test_extend_with_a_key_signs_for_the_request(turns: TurnRunner, tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    key_file = tmp_path / "id_ed25519"
    key_file.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.OpenSSH, NoEncryption()))
    approvers = [{"name": "alice", "public_key": public_key_line(key)}]
    handle = await out_of_iterations(turns, id="keyed-extend", approvers=approvers)
    address = address_of(turns.client)

    unsigned = await invoke(
        "extend", handle.id, "--iterations", "1", "--approver", "alice", *address
    )
    signed = await invoke(
        "extend", handle.id, "--iterations", "1", "--approver", "alice", "--key", str(key_file),
        *address,
    )  # fmt: skip

    assert unsigned.exit_code == 1 and "the budget extension is not signed" in unsigned.stderr
    assert signed.exit_code == 0, signed.output
    assert "signed by alice" in signed.stdout
    report: AgentReport = await handle.result()
    assert [e.signed for e in report.budget_extensions] == [True]


async def test_extend_print_writes_the_signed_payload_for_the_temporal_cli(
    turns: TurnRunner, tmp_path: Path
) -> None:
    key = Ed25519PrivateKey.generate()
    key_file = tmp_path / "id_ed25519"
    key_file.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.OpenSSH, NoEncryption()))
    approvers = [{"name": "alice", "public_key": public_key_line(key)}]
    handle = await out_of_iterations(turns, id="printed-extend", approvers=approvers)
    address = address_of(turns.client)

    printed = await invoke(
        "extend", handle.id, "--iterations", "2", "--approver", "alice", "--key", str(key_file),
        "--print", *address,
    )  # fmt: skip

    assert printed.exit_code == 0, printed.output
    payload = json.loads(printed.stdout)
    assert payload["iterations"] == 2 and payload["approver"] == "alice"
    assert set(payload["signature"]) == {"expires_at", "value"}
    assert "temporal workflow update execute" in printed.stderr
    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert status.state == "awaiting_budget"  # printed, not sent
    command = [
        temporal_binary("temporal"), "workflow", "update", "execute",
        "--workflow-id", handle.id, "--name", "extend_budget", "--input", printed.stdout.strip(),
        *address, "-o", "json",
    ]  # fmt: skip
    done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report: AgentReport = await handle.result()
    assert [e.signed for e in report.budget_extensions] == [True]


async def test_run_shows_the_budget_request_with_the_commands_that_extend_it(
    turns: TurnRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(LIST), fake.text("Done.")])
    agent_file = tmp_path / "agent.json"
    agent = {
        "id": "pausing-agent",
        "model": "anthropic:claude-sonnet-4-6",
        "system_prompt": script_marker(key),
        "max_iterations": 1,
        "constraints": {"on_budget_exhausted": "pause"},
    }
    agent_file.write_text(json.dumps(agent))
    workflow_id = f"turn-budget-{new_key()}"
    address = address_of(turns.client)
    arguments = [
        "run", "List the files", "--agent", str(agent_file), "--id", workflow_id,
        "--task-queue", turns.task_queue, *address,
    ]  # fmt: skip
    request_shown = shown_by_command(monkeypatch, "budget_request")
    running = asyncio.create_task(invoke(*arguments))
    try:
        await until_shown(request_shown, running)
        extended = await invoke("extend", workflow_id, "--iterations", "1", *address)
        result = await asyncio.wait_for(running, timeout=20)
    finally:
        if not running.done():  # never leave the command's thread following a live turn
            await turns.client.get_workflow_handle(workflow_id).terminate("test failed")
            await running

    assert extended.exit_code == 0, extended.output
    assert result.exit_code == 0, result.output
    assert "budget waits for an extension of its iterations (request 1" in result.stdout
    assert f"turnkeeper extend {workflow_id} --iterations 5" in result.stdout
    assert "Done." in result.stdout


async def test_the_temporal_cli_extends_a_budget(turns: TurnRunner) -> None:
    handle = await out_of_iterations(turns)
    command = [
        temporal_binary("temporal"), "workflow", "update", "execute",
        "--workflow-id", handle.id, "--name", "extend_budget",
        "--input", json.dumps({"iterations": 1, "approver": "ops"}),
        *address_of(turns.client), "-o", "json",
    ]  # fmt: skip

    done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True)

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["limits"]["max_iterations"] == 2
    report: AgentReport = await handle.result()
    assert report.budget_extensions[0].approver == "ops"


async def test_the_client_extends_a_budget_and_reports_refusals(turns: TurnRunner) -> None:
    key = Ed25519PrivateKey.generate()
    approvers = [{"name": "alice", "public_key": public_key_line(key)}]
    workflow = await out_of_iterations(turns, id="client-extend", approvers=approvers)
    handle = TurnHandle(turns.client, workflow)

    with pytest.raises(DecisionRefused, match="the budget extension is not signed"):
        await handle.extend_budget(iterations=1, approver="alice")
    result = await handle.extend_budget(iterations=1, approver="alice", key=key, reason="ok")

    assert result.extension.signed and result.limits.max_iterations == 2
    assert (await handle.result()).output == "Done."


async def _pending_until_listed(workflow_id: str, address: list[str]) -> Any:
    """`turnkeeper pending`, again until visibility has indexed the turn's state."""
    for _ in range(100):
        result = await invoke("pending", *address)
        if workflow_id in result.stdout:
            return result
        await asyncio.sleep(0.1)
    raise AssertionError(f"{workflow_id} never listed as pending; last output {result.output}")
