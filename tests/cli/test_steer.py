"""`turnkeeper steer`, `interrupt` and `cancel` against a turn waiting for an approval: the
steer is accepted, the interrupt ends the turn interrupted, and both are refused with the turn's
reason once it has ended; an empty message never reaches the turn; a keyed turn takes a cancel
signed with its approver's key, and refuses one signed with another."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.client import WorkflowExecutionStatus
from turnkeeper.contracts.decision_signing import public_key_line
from turnkeeper.contracts.names import QUERY_STATUS
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import TurnRunner, new_key, scripted_request, wait_for_pending
from tests.fakes import fake_anthropic as fake
from tests.support.console_runs import (  # noqa: F401 (restore_logging: an autouse fixture)
    address_of,
    invoke,
    restore_logging,
)
from tests.support.signing_keys import write_key

WRITE = ("write_file", {"path": "out.md", "content": "hello"})


async def test_steer_then_interrupt_from_the_console(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE), fake.text("never")])
    handle = await turns.start(scripted_request(key, agent={"tools": ["write_file"]}))
    await wait_for_pending(handle)
    address = address_of(turns.client)

    empty = await invoke("steer", handle.id, " ", *address)
    steered = await invoke("steer", handle.id, "Use out2.md.", "--author", "alice", *address)
    stopped = await invoke("interrupt", handle.id, "--reason", "wrong", *address)
    report: AgentReport = await handle.result()
    late = await invoke("steer", handle.id, "Too late.", *address)

    assert empty.exit_code == 2 and "a steer needs a message" in empty.output
    assert steered.exit_code == 0, steered.output
    assert "before the model call of iteration 2" in steered.output
    assert stopped.exit_code == 0 and "outcome interrupted" in stopped.output
    assert report.outcome == "interrupted"
    assert [(i.kind, i.text) for i in report.interventions] == [
        ("steer", "Use out2.md."),
        ("interrupt", "wrong"),
    ]
    assert late.exit_code == 1 and "has ended" in late.output


async def test_cancel_from_the_console_is_signed_with_the_approvers_key(
    turns: TurnRunner, tmp_path: Path
) -> None:
    key, alice, mallory = new_key(), Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    alice_file = write_key(tmp_path / "alice_ed25519", alice)
    mallory_file = write_key(tmp_path / "mallory_ed25519", mallory)
    approvers = [{"name": "alice", "public_key": public_key_line(alice)}]
    turns.fake.script(key, [fake.tool_calls(WRITE), fake.text("never")])
    agent = {"tools": ["write_file"], "approvers": approvers}
    handle = await turns.start(scripted_request(key, agent=agent))
    await wait_for_pending(handle)
    address = address_of(turns.client)

    forged = await invoke(
        "cancel", handle.id, "--author", "alice", "--key", str(mallory_file), *address
    )
    untouched = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    signed = await invoke(
        "cancel", handle.id, "--reason", "wrong", "--author", "alice", "--key", str(alice_file),
        *address,
    )  # fmt: skip

    assert forged.exit_code == 1 and "does not verify" in forged.output
    assert untouched.state == "awaiting_approval"
    assert signed.exit_code == 0 and "outcome cancelled" in signed.output
    assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
    ended = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert [(i.kind, i.author, i.text, i.signed) for i in ended.interventions] == [
        ("cancel", "alice", "wrong", True)
    ]
