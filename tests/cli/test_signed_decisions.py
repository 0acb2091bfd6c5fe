"""`turnkeeper approve|reject … --key FILE [--print]`: decisions signed with an OpenSSH Ed25519
key, sent to a keyed turn or printed for `temporal workflow signal`. (The one clear line for every
key or flag that cannot work: tests/unit/console/test_signing.py.)"""

from __future__ import annotations

import asyncio
import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.client import WorkflowHandle
from turnkeeper.contracts.decision_signing import (
    DECISION,
    parse_expires_at,
    public_key_line,
    signature_problem,
)
from turnkeeper.contracts.names import QUERY_STATUS, UPDATE_DECIDE
from turnkeeper.contracts.signals import ApproveInput, DecideResult, SignedCall, TurnStatus
from typer.testing import Result

from tests.conftest import TurnRunner, new_key, scripted_request, temporal_binary, wait_for_pending
from tests.fakes import fake_anthropic as fake
from tests.support.console_runs import (  # noqa: F401 (restore_logging: an autouse fixture)
    address_of,
    invoke,
    restore_logging,
    runner,
)
from tests.support.signing_keys import write_key
from tests.support.waiting import until
from turnkeeper.console.cli import app
from turnkeeper.console.signing import PASSPHRASE_ENV

WRITE_A = ("write_file", {"path": "a.md", "content": "A"})
WRITE_B = ("write_file", {"path": "b.md", "content": "B"})


async def invoke_with(*arguments: str, input: str | None, env: dict[str, str]) -> Result:
    """`invoke`, with standard input and environment variables."""
    return await asyncio.to_thread(runner.invoke, app, list(arguments), input=input, env=env)


async def keyed_turn(
    turns: TurnRunner, key: Ed25519PrivateKey, *calls: tuple[str, dict[str, Any]]
) -> tuple[WorkflowHandle, list[str]]:
    """A turn whose approver alice holds `key`, waiting on `calls`; its handle and call ids."""
    script = new_key()
    turns.fake.script(script, [fake.tool_calls(*calls), fake.text("Done.")])
    alice = {"name": "alice", "public_key": public_key_line(key) + " alice@test"}
    request = scripted_request(script, agent={"id": f"agent-{script}", "approvers": [alice]})
    handle = await turns.start(request)
    status = await wait_for_pending(handle, count=len(calls))
    return handle, [call.call_id for call in status.pending]


async def agent_of(handle: WorkflowHandle) -> str:
    return (await handle.query(QUERY_STATUS, result_type=TurnStatus)).agent_id


def verifies(
    payload: dict[str, Any],
    handle: WorkflowHandle,
    key: Ed25519PrivateKey,
    agent_id: str,
    tool: str,
) -> str | None:
    """Why `payload` is not alice's signed decision on the write of a.md in the turn of `handle`
    (its workflow id and first run), or None."""
    decision = ApproveInput.model_validate(payload)
    assert decision.signature is not None
    run = handle.first_execution_run_id
    return signature_problem(
        DECISION,
        decision.signed_fields(SignedCall(handle.id, agent_id, tool, WRITE_A[1], run)),
        decision.signature,
        public_key_line(key),
        datetime.now(UTC),
    )


@pytest.fixture
def alice_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


async def test_approve_and_reject_with_a_key_sign_and_the_turn_applies_them(
    turns: TurnRunner, alice_key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    key_file = write_key(tmp_path / "id_ed25519", alice_key)
    handle, [first, second] = await keyed_turn(turns, alice_key, WRITE_A, WRITE_B)
    signing = ["--key", str(key_file), "--approver", "alice"]

    approved = await invoke("approve", handle.id, first, *signing, *address_of(turns.client))
    rejected = await invoke(
        "reject", handle.id, second, "--reason", "not b", *signing, *address_of(turns.client)
    )
    report = await handle.result()

    assert approved.exit_code == 0, approved.output
    assert f"approved {first} (write_file) of {handle.id}, signed by alice" in approved.stdout
    assert rejected.exit_code == 0, rejected.output
    assert {(d.call_id, d.approved, d.signed) for d in report.decisions} == {
        (first, True, True),
        (second, False, True),
    }
    assert (turns.workspace / "a.md").exists() and not (turns.workspace / "b.md").exists()


async def test_a_key_the_turn_does_not_list_is_refused_and_the_call_keeps_waiting(
    turns: TurnRunner, alice_key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    impostor = write_key(tmp_path / "other", Ed25519PrivateKey.generate())
    handle, [call] = await keyed_turn(turns, alice_key, WRITE_A)

    result = await invoke(
        "approve", handle.id, call, "--key", str(impostor), "--approver", "alice",
        *address_of(turns.client),
    )  # fmt: skip
    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    await handle.cancel()

    assert result.exit_code == 1, result.output
    assert f"error: The turn refused the decision on {call}: alice's signature does not verify" in (
        " ".join(result.stderr.split())
    )
    assert "Traceback" not in result.output
    assert status.state == "awaiting_approval" and [p.call_id for p in status.pending] == [call]


async def test_print_gives_a_payload_the_temporal_cli_can_send(
    turns: TurnRunner, alice_key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    key_file = write_key(tmp_path / "id_ed25519", alice_key)
    handle, [call] = await keyed_turn(turns, alice_key, WRITE_A)

    printed = await invoke(
        "approve", handle.id, call, "--key", str(key_file), "--approver", "alice",
        "--reason", "reviewed ✓", "--expires-in", "90", "--print", *address_of(turns.client),
    )  # fmt: skip
    payload = json.loads(printed.stdout)  # nothing but the payload on stdout
    command = [
        temporal_binary("temporal"), "workflow", "signal", "--workflow-id", handle.id,
        "--name", "approve", "--input", printed.stdout.strip(),
        "--address", turns.client.service_client.config.target_host,
    ]  # fmt: skip
    sent = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True)
    report = await handle.result()

    assert printed.exit_code == 0, printed.output
    assert (payload["call_id"], payload["approver"], payload["reason"]) == (
        call,
        "alice",
        "reviewed ✓",
    )
    assert verifies(payload, handle, alice_key, await agent_of(handle), "write_file") is None
    expires = parse_expires_at(payload["signature"]["expires_at"])
    assert timedelta(seconds=80) < expires - datetime.now(UTC) <= timedelta(seconds=90)
    assert payload["signature"]["expires_at"].endswith("Z")  # ISO-8601 UTC, whole seconds
    assert "temporal workflow signal" in printed.stderr
    assert sent.returncode == 0, sent.stderr
    assert report.decisions[0].signed and report.decisions[0].reason == "reviewed ✓"


async def test_print_all_signs_the_star_and_decide_applies_it_to_every_call(
    turns: TurnRunner, alice_key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    passphrase = b"correct horse"
    key_file = write_key(tmp_path / "id_ed25519", alice_key, passphrase)
    handle, calls = await keyed_turn(turns, alice_key, WRITE_A, WRITE_B)

    printed = await invoke_with(
        "approve", handle.id, "all", "--key", str(key_file), "--approver", "alice", "--print",
        *address_of(turns.client), input=None, env={PASSPHRASE_ENV: passphrase.decode()},
    )  # fmt: skip
    payload = json.loads(printed.stdout)
    applied = await handle.execute_update(UPDATE_DECIDE, payload, result_type=DecideResult)

    assert printed.exit_code == 0, printed.output
    assert payload["call_id"] == "*"
    assert sorted(d.call_id for d in applied.decisions) == sorted(calls)
    assert all(d.signed for d in applied.decisions)


async def test_a_protected_key_asks_for_its_passphrase(
    turns: TurnRunner, alice_key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    key_file = write_key(tmp_path / "id_ed25519", alice_key, b"s3cret")
    handle, [call] = await keyed_turn(turns, alice_key, WRITE_A)
    arguments = ["reject", handle.id, call, "--reason", "no", "--print"]
    arguments += ["--key", str(key_file), "--approver", "alice", *address_of(turns.client)]

    asked = await invoke_with(*arguments, input="s3cret\n", env={})
    wrong = await invoke_with(*arguments, input="guess\n", env={})
    none = await invoke_with(*arguments, input="", env={})

    assert asked.exit_code == 0, asked.output
    assert "Passphrase for" in asked.stderr and "s3cret" not in asked.output
    payload = json.loads(asked.stdout)
    agent_id = await agent_of(handle)
    await handle.cancel()
    assert payload["approved"] is False
    assert verifies(payload, handle, alice_key, agent_id, "write_file") is None
    assert wrong.exit_code == 2 and "wrong passphrase" in wrong.stderr
    assert none.exit_code == 2 and PASSPHRASE_ENV in none.stderr


async def test_status_lists_the_decisions_the_turn_refused(
    turns: TurnRunner, alice_key: Ed25519PrivateKey
) -> None:
    handle, [call] = await keyed_turn(turns, alice_key, WRITE_A)
    await handle.signal("approve", {"call_id": call, "approved": True, "approver": "alice"})
    await until(
        lambda: handle.query(QUERY_STATUS, result_type=TurnStatus),
        lambda status: status.refused_decisions,
        "the unsigned approval is refused",
    )

    shown = await invoke("status", handle.id, *address_of(turns.client))
    as_json = await invoke("status", handle.id, "--json", *address_of(turns.client))
    await handle.cancel()

    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())
    assert f"call {call} from alice" in text and "the decision is not signed" in text
    [refused] = json.loads(as_json.stdout)["refused_decisions"]
    assert (refused["call_id"], refused["approver"]) == (call, "alice")
