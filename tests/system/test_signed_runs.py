"""Signatures bound to one turn, against `python worker.py` and `turnkeeper serve` as processes:
an attacker who can reach the namespace (the raw `temporal` CLI) copies what alice signed for
one turn (a decision from `turnkeeper approve --print`, a steer, an interrupt, a cancel) and
sends it to the next turn started under the same workflow id, with the same call id and input;
each is refused, and that turn finishes untouched when alice decides it. Over HTTP a keyed
agent's turn is cancelled only by an approver who has a key."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx2 as httpx
from cryptography.hazmat.primitives.serialization import load_ssh_private_key
from turnkeeper.contracts.steering import CancelInput, InterruptInput, SteerInput

from tests.conftest import new_key, temporal_binary
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess, run
from tests.system.test_approvals_and_budgets import (
    keypair,
    result,
    start,
    status,
    turn_request,
    wait_for_state,
)
from tests.system.test_http_api import served  # noqa: F401 (a fixture)
from turnkeeper.client.client import turn
from turnkeeper.client.signatures import signed_intervention

WRITE = ("write_file", {"path": "note.md", "content": "hello"})


def keyed(key: str, public: str) -> dict[str, Any]:
    request = turn_request(key)
    request["agent"]["approvers"] = [{"name": "alice", "public_key": public}]
    return request


async def update(
    stack: SystemStack, workflow_id: str, name: str, payload: dict[str, Any]
) -> tuple[int, str]:
    """The update `name` sent with the raw `temporal` CLI: its exit code and what it said."""
    command = [
        temporal_binary("temporal"), "workflow", "update", "execute", "--workflow-id",
        workflow_id, "--name", name, "--input", json.dumps(payload), "--address", stack.address,
    ]  # fmt: skip
    done = await run(command)
    return done.returncode, done.stdout + done.stderr


async def signed_for(
    stack: SystemStack, workflow_id: str, private: Path
) -> dict[str, dict[str, Any]]:
    """What alice signed for the turn running at `workflow_id` now (with her own client): a
    steer, an interrupt and a cancel, never sent to it."""
    key = load_ssh_private_key(private.read_bytes(), None)
    handle = turn(stack.client, workflow_id)
    now = await handle.status()
    lifetime = timedelta(minutes=10)
    steer = SteerInput(message="Write MALLORY instead.", author="alice")
    interrupt = InterruptInput(reason="stop", author="alice")
    cancel = CancelInput(reason="stop", author="alice")
    return {
        "steer": signed_intervention(steer, now, workflow_id, key, lifetime).model_dump(),
        "interrupt": signed_intervention(interrupt, now, workflow_id, key, lifetime).model_dump(),
        "cancel": signed_intervention(cancel, now, workflow_id, key, lifetime).model_dump(),
    }


async def test_what_alice_signed_for_one_turn_does_nothing_to_the_next_turn_of_its_id(
    stack: SystemStack, tmp_path: Path
) -> None:
    worker = await stack.start_worker()
    private, public = keypair(tmp_path)
    key = new_key()
    stack.fake.script(key, [fake.tool_calls(WRITE), fake.text("Saved.")])
    workflow_id = await start(stack, worker, keyed(key, public))
    first = await wait_for_state(stack, workflow_id, "awaiting_approval")
    [call] = first["pending"]
    printed = await stack.turnkeeper(
        "approve", workflow_id, call["call_id"], "--approver", "alice",
        "--key", str(private), "--print", worker=worker,
    )  # fmt: skip
    approval = json.loads(printed.stdout)
    copies = await signed_for(stack, workflow_id, private)
    await stack.temporal(
        "workflow", "signal", "--workflow-id", workflow_id, "--name", "approve",
        "--input", json.dumps(approval),
    )  # fmt: skip
    await result(stack, workflow_id)

    # The next turn at the same id: same script, so the same call id and the same input.
    stack.fake.script(key, [fake.tool_calls(WRITE), fake.text("Saved.")])
    await start(stack, worker, keyed(key, public))
    second = await wait_for_state(stack, workflow_id, "awaiting_approval")
    assert second["pending"][0]["call_id"] == call["call_id"]
    assert second["first_run_id"] != first["first_run_id"]

    answers = {name: await update(stack, workflow_id, name, copy) for name, copy in copies.items()}
    answers["decide"] = await update(stack, workflow_id, "decide", approval)
    await stack.temporal(
        "workflow", "signal", "--workflow-id", workflow_id, "--name", "approve",
        "--input", json.dumps(approval),
    )  # fmt: skip
    after = await until(
        lambda: status(stack, workflow_id),
        lambda seen: seen.get("refused_decisions"),
        "the copied approve to be refused",
    )
    await stack.turnkeeper(
        "reject", workflow_id, call["call_id"], "--approver", "alice", "--key", str(private),
        "--reason", "not now", worker=worker,
    )  # fmt: skip
    report = await result(stack, workflow_id)

    for name, (code, said) in answers.items():
        assert code != 0 and "signature does not verify" in said, name
    assert "signature does not verify" in after["refused_decisions"][-1]["reason"]
    assert after["state"] == "awaiting_approval" and not after.get("interventions")
    assert report["outcome"] == "completed" and report["output"] == "Saved."
    assert [d["approved"] for d in report["decisions"]] == [False]
    assert not report.get("interventions")
    # Only alice's own rejection reached the second turn's history: a refused update leaves none.
    assert len(await history_updates(stack, workflow_id)) == 1


async def history_updates(stack: SystemStack, workflow_id: str) -> list[dict[str, Any]]:
    """The updates the current turn at `workflow_id` accepted (a refused one leaves none)."""
    shown = await stack.temporal("workflow", "show", "--workflow-id", workflow_id)
    return [e for e in shown["events"] if e["eventType"].endswith("UPDATE_ACCEPTED")]


async def test_over_http_a_keyed_turn_is_cancelled_only_with_an_approvers_key(
    stack: SystemStack,
    served: tuple[WorkerProcess, str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    worker, url, keyless_token = served  # alice, listed by name only: she has no key
    private, public = keypair(tmp_path)
    added = await stack.turnkeeper(
        "tokens", "add", "carol", "--file", str(stack.tmp_path / "tokens.json"),
        "--key", str(private), worker=worker,
    )  # fmt: skip
    carol = {"Authorization": f"Bearer {added.stdout.strip().splitlines()[-1]}"}
    keyless = {"Authorization": f"Bearer {keyless_token}"}
    key = new_key()
    stack.fake.script(key, [fake.tool_calls(WRITE), fake.text("never")])
    request = turn_request(key)
    request["agent"]["approvers"] = [{"name": "carol", "public_key": public}, "alice"]
    workflow_id = await start(stack, worker, request)
    await wait_for_state(stack, workflow_id, "awaiting_approval")

    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        path = f"/v1/turns/{workflow_id}/cancel"
        refused = await http.post(path, headers=keyless)
        still = await status(stack, workflow_id)
        cancelled = await http.post(path, headers=carol)
    ended = await wait_for_state(stack, workflow_id, "cancelled")

    assert refused.status_code == 403 and "has no key" in refused.text
    assert still["state"] == "awaiting_approval"
    assert cancelled.status_code == 202, cancelled.text
    described = await stack.temporal("workflow", "describe", "--workflow-id", workflow_id)
    assert described["workflowExecutionInfo"]["status"] == "WORKFLOW_EXECUTION_STATUS_CANCELED"
    [intervention] = ended["interventions"]
    assert (intervention["kind"], intervention["author"], intervention["signed"]) == (
        "cancel",
        "carol",
        True,
    )
