"""Approvals that cannot be forged: when `agent.approvers` lists public keys, a turn applies only
decisions signed by them. Every forgery below is refused by the `decide` validator or ignored by
the `approve` signal (and listed in `refused_decisions`) while the call keeps waiting; a properly
signed decision, and a properly signed standing approval, go through."""

from __future__ import annotations

import base64
import hashlib
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from turnkeeper.contracts import errors
from turnkeeper.contracts.approvals import (
    APPROVAL_CACHE_WORKFLOW,
    SIGNAL_REMEMBER,
    ApprovalCacheInput,
    RememberInput,
    SignedGrant,
    approval_cache_id,
)
from turnkeeper.contracts.decision_signing import SIGNING_VERSION, public_key_line
from turnkeeper.contracts.names import QUERY_STATUS, SIGNAL_APPROVE, UPDATE_DECIDE, WORKFLOW_TYPE
from turnkeeper.contracts.signals import (
    ALL_PENDING,
    ApproveInput,
    DecideResult,
    SignedCall,
    TurnStatus,
)
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import (
    TurnRunner,
    failure_of,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
    wait_for_pending,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.waiting import until
from tests.workflows.test_continue_as_new import eager_env  # noqa: F401 (a fixture)
from turnkeeper.client.approvals import list_standing

# The agent of the keyed turns; tests that remember use an agent (and approval cache) of their own.
SIGNED_AGENT = "signed-agent"
WRITE_A = ("write_file", {"path": "a.md", "content": "A"})
ELSEWHERE_RUN = "run-of-a-turn-elsewhere"
WRITE_B = ("write_file", {"path": "b.md", "content": "B"})
EDIT_1 = {"path": "a.md", "content": "what alice saw"}
EDIT_2 = {"path": "a.md", "content": "what mallory wants"}


@dataclass
class Signer:
    """Someone with an Ed25519 key, signing decisions as `name`."""

    name: str
    key: Ed25519PrivateKey = field(default_factory=Ed25519PrivateKey.generate)

    def entry(self) -> dict[str, str]:
        """How `agent.approvers` lists this signer."""
        return {"name": self.name, "public_key": f"{public_key_line(self.key)} {self.name}@test"}

    def sign(
        self,
        payload: dict[str, Any],
        where: WorkflowHandle | str,
        expires: datetime | None = None,
        *,
        agent_id: str = SIGNED_AGENT,
        tool: str = "write_file",
        call_input: dict[str, Any] = WRITE_A[1],
    ) -> dict[str, Any]:
        """Signs `payload` for a call of `tool` with `call_input` (default: the write of a.md,
        which most tests decide; every waiting call: `*`) in the turn `where` (a handle: its
        workflow id and first run; a workflow id alone: a turn elsewhere)."""
        decision = ApproveInput.model_validate({"approver": self.name, **payload})
        expires = expires or datetime.now(UTC) + timedelta(minutes=10)
        workflow_id, run = turn_of(where)
        call = SignedCall(workflow_id, agent_id, tool, call_input, run)
        if decision.call_id == ALL_PENDING:
            call = SignedCall(workflow_id, agent_id, ALL_PENDING, first_run_id=run)
        return decision.signed_with(self.key, call, expires).model_dump(mode="json")


def turn_of(where: WorkflowHandle | str) -> tuple[str, str]:
    """The workflow id and first run id that a signature for `where` binds."""
    if isinstance(where, str):
        return where, ELSEWHERE_RUN
    assert where.first_execution_run_id is not None, "a handle from start_workflow"
    return where.id, where.first_execution_run_id


def keyed_request(key: str, approvers: list[Any], agent_id: str | None = None) -> dict[str, Any]:
    agent = {"id": agent_id or SIGNED_AGENT, "approvers": approvers}
    return scripted_request(key, agent=agent)


async def status_of(handle: WorkflowHandle) -> TurnStatus:
    return await handle.query(QUERY_STATUS, result_type=TurnStatus)


async def wait_refused(handle: WorkflowHandle, count: int) -> TurnStatus:
    """Polls until the turn lists `count` refused decisions (a signal is handled in its own
    workflow task, after the `signal` call returns)."""
    return await until(
        lambda: status_of(handle),
        lambda status: len(status.refused_decisions) >= count,
        f"{count} refused decisions",
    )


async def wait_for_iteration(handle: WorkflowHandle) -> None:
    """Polls until the turn has begun (its state exists, so a refusal can be listed)."""
    await until(
        lambda: status_of(handle), lambda status: status.iteration >= 1, "the first iteration"
    )


async def refusal_of(handle: WorkflowHandle, payload: dict[str, Any]) -> str | None:
    """The `decide` update's refusal message, or None when it was accepted."""
    try:
        await handle.execute_update(UPDATE_DECIDE, payload, result_type=DecideResult)
    except (WorkflowUpdateFailedError, RPCError) as error:
        cause = getattr(error, "cause", None)
        return str(getattr(cause, "message", None) or error)
    return None


async def history_length(handle: WorkflowHandle) -> int:
    return len([event async for event in handle.fetch_history_events()])


def hand_signed(
    payload: dict[str, Any], turn: WorkflowHandle, key: Ed25519PrivateKey, call_input: dict
) -> dict:
    """Signs as the README documents it, with a JCS library and without turnkeeper's helpers:
    what any client can do."""
    expires_at = (datetime.now(UTC) + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    signed = {
        "workflow_id": turn.id,
        "first_run_id": turn.first_execution_run_id,
        "agent_id": SIGNED_AGENT,
        "call_id": payload["call_id"],
        "tool": "write_file",
        "call_input_sha256": hashlib.sha256(rfc8785.dumps(call_input)).hexdigest(),
        "approved": payload["approved"],
        "input": payload.get("input"),
        "reason": payload.get("reason", ""),
        "remember": payload.get("remember", False),
        "approver": payload["approver"],
        "expires_at": expires_at,
    }
    value = key.sign(b"turnkeeper-decision-v3\n" + rfc8785.dumps(signed))
    signature = {"expires_at": expires_at, "value": base64.b64encode(value).decode()}
    return {**payload, "signature": signature}


def forgeries(
    alice: Signer, turn: WorkflowHandle, call: str, other_call: str
) -> dict[str, tuple[dict[str, Any], str]]:
    """Every way we know to try deciding `call` without alice's consent, with the reason the
    turn must give. The turn lists alice (keyed) and bob (a plain name)."""
    base = {"call_id": call, "approved": True, "reason": "ok", "approver": "alice"}
    impostor = Signer("alice")  # same name, a key the turn does not list
    garbage = base64.b64encode(os.urandom(64)).decode()
    later = (datetime.now(UTC) + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "unsigned, in alice's name": (base, "not signed"),
        "garbage signature": (
            {**base, "signature": {"expires_at": later, "value": garbage}},
            "does not verify",
        ),
        "malformed signature": ({**base, "signature": "trust me"}, "signature"),
        "signed by a key not listed": (impostor.sign(base, turn), "does not verify"),
        "copied from another call": (
            {
                **alice.sign({**base, "call_id": other_call}, turn, call_input=WRITE_B[1]),
                "call_id": call,
            },
            "does not verify",
        ),
        "signed for another input of the call": (
            alice.sign(base, turn, call_input=WRITE_B[1]),
            "does not verify",
        ),
        "copied from another workflow": (
            alice.sign(base, f"turn-{uuid.uuid4()}"),
            "does not verify",
        ),
        "input altered after signing": (
            {**alice.sign({**base, "input": EDIT_1}, turn), "input": EDIT_2},
            "does not verify",
        ),
        "reason altered after signing": (
            {**alice.sign(base, turn), "reason": "changed"},
            "does not verify",
        ),
        "rejection turned into an approval": (
            {**alice.sign({**base, "approved": False}, turn), "approved": True},
            "does not verify",
        ),
        "remember added after signing": (
            {**alice.sign(base, turn), "remember": True},
            "does not verify",
        ),
        "expired": (
            alice.sign(base, turn, expires=datetime.now(UTC) - timedelta(seconds=1)),
            "expired at",
        ),
        "one call's signature used for '*'": (
            {**alice.sign(base, turn), "call_id": "*"},
            "does not verify",
        ),
        "plain-name approver (no key)": ({**base, "approver": "bob"}, "'bob' has no public key"),
        "plain-name approver, self-signed": (
            Signer("bob").sign({**base, "approver": "bob"}, turn),
            "'bob' has no public key",
        ),
        "unlisted approver, self-signed": (
            Signer("mallory").sign({**base, "approver": "mallory"}, turn),
            "'mallory' may not decide",
        ),
    }


async def assert_still_waiting(handle: WorkflowHandle, calls: set[str]) -> TurnStatus:
    status = await status_of(handle)
    assert status.state == "awaiting_approval"
    assert {p.call_id for p in status.pending} == calls
    return status


async def test_forged_decisions_are_refused_and_the_turn_keeps_waiting(
    turns: TurnRunner,
) -> None:
    alice = Signer("alice")
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE_A, WRITE_B), fake.text("saved")])
    handle = await turns.start(keyed_request(key, [alice.entry(), "bob"]))
    first, second = (await wait_for_pending(handle, count=2)).pending
    both = {first.call_id, second.call_id}
    attempts = forgeries(alice, handle, first.call_id, second.call_id)
    tried = accepted = 0

    # Through the `decide` update: refused by the validator, nothing reaches history.
    events_before = await history_length(handle)
    for label, (payload, needle) in attempts.items():
        tried += 1
        message = await refusal_of(handle, payload)
        accepted += message is None
        assert message is not None and needle in message, (label, message)
    assert await history_length(handle) == events_before
    await assert_still_waiting(handle, both)

    # Through the `approve` signal: ignored, and listed with the reason.
    for count, (label, (payload, needle)) in enumerate(attempts.items(), start=1):
        tried += 1
        await handle.signal(SIGNAL_APPROVE, payload)
        status = await wait_refused(handle, count)
        refused = status.refused_decisions[-1]
        assert needle in refused.reason, (label, refused)
        if status.state != "awaiting_approval" or len(status.pending) != 2:
            accepted += 1
    status = await assert_still_waiting(handle, both)
    assert [r.call_id for r in status.refused_decisions].count(first.call_id) == len(attempts) - 1

    print(f"forged decisions tried: {tried}, accepted: {accepted}")
    assert (tried, accepted) == (2 * len(attempts), 0)
    assert not (turns.workspace / "a.md").exists()

    # alice's own decisions still go through: one by signal (signed by hand), one by update.
    approve_a = {"call_id": first.call_id, "approved": True, "approver": "alice"}
    await handle.signal(SIGNAL_APPROVE, hand_signed(approve_a, handle, alice.key, WRITE_A[1]))
    reject_b = {"call_id": second.call_id, "approved": False, "reason": "not b"}
    applied = await handle.execute_update(
        UPDATE_DECIDE,
        alice.sign(reject_b, handle, call_input=WRITE_B[1]),
        result_type=DecideResult,
    )
    report = await handle.result()

    assert [(d.approved, d.signed) for d in applied.decisions] == [(False, True)]
    assert (turns.workspace / "a.md").read_text() == "A"
    assert not (turns.workspace / "b.md").exists()
    assert {(d.call_id, d.approver, d.signed) for d in report.decisions} == {
        (first.call_id, "alice", True),
        (second.call_id, "alice", True),
    }


async def test_a_signed_star_and_a_signed_edit_are_applied(turns: TurnRunner) -> None:
    alice = Signer("alice")
    key, edit_key = new_key(), new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE_A, WRITE_B), fake.text("both saved")])
    turns.fake.script(edit_key, [fake.tool_calls(WRITE_A), fake.text("saved")])
    handle = await turns.start(keyed_request(key, [alice.entry()]))
    editing = await turns.start(keyed_request(edit_key, [alice.entry()]))
    await wait_for_pending(handle, count=2)
    [pending] = (await wait_for_pending(editing)).pending

    star = alice.sign({"call_id": "*", "approved": True}, handle)
    applied = await handle.execute_update(UPDATE_DECIDE, star, result_type=DecideResult)
    edit = {"call_id": pending.call_id, "approved": True, "input": EDIT_1}
    await editing.signal(SIGNAL_APPROVE, alice.sign(edit, editing))
    await handle.result()
    await editing.result()

    assert [d.signed for d in applied.decisions] == [True, True]
    assert (turns.workspace / "b.md").read_text() == "B"
    assert (turns.workspace / "a.md").read_text() == "what alice saw"


async def test_a_signed_star_cannot_be_replayed_on_later_calls(turns: TurnRunner) -> None:
    alice = Signer("alice")
    key = new_key()
    write_c = ("write_file", {"path": "c.md", "content": "C"})
    turns.fake.script(
        key, [fake.tool_calls(WRITE_A, WRITE_B), fake.tool_calls(write_c), fake.text("done")]
    )
    handle = await turns.start(keyed_request(key, [alice.entry()]))
    await wait_for_pending(handle, count=2)
    star = alice.sign({"call_id": "*", "approved": True}, handle)
    await handle.execute_update(UPDATE_DECIDE, star, result_type=DecideResult)
    await until(
        lambda: status_of(handle),
        lambda status: status.pending and status.pending[0].input["path"] == "c.md",
        "the second round's call waits",
    )

    # The same '*' payload, copied from history and sent again, decides nothing now.
    by_update = await refusal_of(handle, star)
    await handle.signal(SIGNAL_APPROVE, star)
    by_signal = (await wait_refused(handle, 1)).refused_decisions[-1].reason
    waiting = await status_of(handle)
    # Signed anew (Ed25519 is deterministic: a new signature needs a new expiry or reason).
    later = datetime.now(UTC) + timedelta(minutes=11)
    fresh = alice.sign({"call_id": "*", "approved": True}, handle, expires=later)
    await handle.execute_update(UPDATE_DECIDE, fresh)
    report = await handle.result()

    assert by_update is not None and "used already" in by_update
    assert "used already" in by_signal
    assert waiting.state == "awaiting_approval" and len(waiting.pending) == 1
    assert report.output == "done" and (turns.workspace / "c.md").exists()


async def test_signatures_are_ignored_on_a_turn_without_keys(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE_A), fake.text("saved")])
    handle = await turns.start(scripted_request(key, agent={"approvers": ["alice"]}))
    [pending] = (await wait_for_pending(handle)).pending

    decision = {"call_id": pending.call_id, "approved": True}
    await handle.signal(SIGNAL_APPROVE, Signer("alice").sign(decision, handle))
    report = await handle.result()

    [applied] = report.decisions
    assert (applied.approver, applied.signed) == ("alice", False)


@pytest.mark.parametrize(
    ("approvers", "needle"),
    [
        ([{"name": "alice", "public_key": "ssh-rsa AAAAB3NzaC1yc2E"}], "agent.approvers.0"),
        ([{"name": "alice", "public_key": "ssh-ed25519 AAAA"}], "not an OpenSSH public key"),
        (["alice", {"name": "alice"}], "repeated: ['alice']"),
    ],
)
async def test_bad_keyed_approvers_make_the_request_invalid(
    turns: TurnRunner, approvers: list[Any], needle: str
) -> None:
    error, _ = await failure_of(turns, keyed_request(new_key(), approvers))

    assert error.type == errors.INVALID_TURN_REQUEST
    assert "agent.approvers" in error.message and needle in error.message


async def test_only_the_latest_refused_decisions_are_kept(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE_A), fake.text("-")])
    handle = await turns.start(keyed_request(key, [Signer("alice").entry()]))
    [pending] = (await wait_for_pending(handle)).pending

    for number in range(25):
        unsigned = {"call_id": f"{pending.call_id}-{number}", "approved": True}
        await handle.signal(SIGNAL_APPROVE, {**unsigned, "approver": "alice"})
    status = await until(
        lambda: status_of(handle),
        lambda status: (
            status.refused_decisions and status.refused_decisions[-1].call_id.endswith("-24")
        ),
        "the last approval sent is handled",
    )
    await handle.cancel()

    assert [r.call_id for r in status.refused_decisions] == [
        f"{pending.call_id}-{number}" for number in range(5, 25)
    ]
    assert status.state == "awaiting_approval"


async def remember_directly(
    turns: TurnRunner, agent_id: str, grant: SignedGrant | None, approver: str = "alice"
) -> None:
    """What anyone able to signal the namespace can do: tell the agent's cache to remember."""
    await turns.client.start_workflow(
        APPROVAL_CACHE_WORKFLOW,
        ApprovalCacheInput(agent_id=agent_id),
        id=approval_cache_id(agent_id),
        task_queue=turns.task_queue,
        start_signal=SIGNAL_REMEMBER,
        start_signal_args=[
            RememberInput(tool="write_file", approver=approver, reason="trust me", grant=grant)
        ],
    )


def grant_of(
    signer: Signer, agent_id: str, tool: str = "write_file", **changes: Any
) -> SignedGrant:
    """A grant signed by `signer` for a call of `tool` in some other turn of `agent_id`, then
    altered by `changes`."""
    decision = {"call_id": "toolu_x", "approved": True, "remember": True}
    decision.update(changes.pop("signed", {}))
    signed_payload = signer.sign(decision, "turn-elsewhere", agent_id=agent_id, tool=tool)
    signed = ApproveInput.model_validate(signed_payload)
    call = SignedCall("turn-elsewhere", agent_id, tool, WRITE_A[1], ELSEWHERE_RUN)
    grant = SignedGrant.of(signed, call, SIGNING_VERSION)
    assert grant is not None
    return grant.model_copy(update=changes)


async def test_forged_standing_approvals_do_not_auto_approve_a_keyed_turn(
    turns: TurnRunner,
) -> None:
    alice = Signer("alice")
    agent_id = f"agent-{new_key()}"
    forged = {
        "no grant": None,
        "grant signed by a key not listed": grant_of(Signer("alice"), agent_id),
        "grant of an approval without remember": grant_of(
            alice, agent_id, signed={"remember": False}
        ),
        "grant of a rejection": grant_of(alice, agent_id, signed={"approved": False}),
        "grant altered after signing": grant_of(
            alice, agent_id, signed={"approved": False}, approved=True
        ),
        "grant by a plain-name approver": grant_of(Signer("bob"), agent_id),
        # A real grant of alice's, relabelled: for another agent, or for another tool.
        "grant of another agent, stored here": grant_of(alice, "agent-elsewhere"),
        "grant of another tool, stored under this one": grant_of(alice, agent_id, "read_file"),
        "grant of another tool, relabelled": grant_of(alice, agent_id, "read_file").model_copy(
            update={"tool": "write_file"}
        ),
        "grant of a '*' decision": grant_of(alice, agent_id, "*"),
    }
    tried = accepted = 0
    for label, grant in forged.items():
        tried += 1
        await remember_directly(turns, agent_id, grant)
        key = new_key()
        turns.fake.script(key, [fake.tool_calls(WRITE_A), fake.text("-")])
        handle = await turns.start(keyed_request(key, [alice.entry(), "bob"], agent_id))
        status = await wait_for_pending(handle)
        accepted += status.state != "awaiting_approval"
        assert status.state == "awaiting_approval", label
        await handle.cancel()

    print(f"forged standing approvals tried: {tried}, accepted: {accepted}")
    assert accepted == 0
    assert not (turns.workspace / "a.md").exists()

    # A turn without keys trusts the cache as before: the same forgery approves it.
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE_B), fake.text("saved")])
    unkeyed = await turns.run(scripted_request(key, agent={"id": agent_id}))
    assert unkeyed.decisions[0].standing and (turns.workspace / "b.md").exists()

    # A grant alice really signed is honoured, whoever delivered it.
    await remember_directly(turns, agent_id, grant_of(alice, agent_id))
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE_A), fake.text("saved")])
    keyed = await turns.run(keyed_request(key, [alice.entry(), "bob"], agent_id))
    [decision] = keyed.decisions
    assert (decision.standing, decision.signed) == (True, True)


async def test_a_signed_remember_lets_later_keyed_turns_run_without_asking(
    turns: TurnRunner,
) -> None:
    alice = Signer("alice")
    agent_id = f"agent-{new_key()}"
    first_key, second_key = new_key(), new_key()
    turns.fake.script(first_key, [fake.tool_calls(WRITE_A), fake.text("saved")])
    turns.fake.script(second_key, [fake.tool_calls(WRITE_B), fake.text("saved again")])

    first = await turns.start(keyed_request(first_key, [alice.entry()], agent_id))
    [pending] = (await wait_for_pending(first)).pending
    remember = {"call_id": pending.call_id, "approved": True, "remember": True, "reason": "ok"}
    await first.execute_update(UPDATE_DECIDE, alice.sign(remember, first, agent_id=agent_id))
    await first.result()
    [standing] = await list_standing(turns.client, agent_id)
    second = await turns.run(keyed_request(second_key, [alice.entry()], agent_id))

    assert standing.grant is not None
    assert (standing.grant.workflow_id, standing.grant.call_id) == (first.id, pending.call_id)
    [decision] = second.decisions
    assert (decision.standing, decision.signed, decision.tool) == (True, True, "write_file")
    assert (turns.workspace / "b.md").read_text() == "B"

    # A turn that lists another key under alice's name does not trust her grant.
    third_key = new_key()
    turns.fake.script(third_key, [fake.tool_calls(WRITE_A), fake.text("-")])
    third = await turns.start(keyed_request(third_key, [Signer("alice").entry()], agent_id))
    assert (await wait_for_pending(third)).state == "awaiting_approval"
    await third.cancel()


async def test_refusals_and_signatures_survive_continue_as_new(
    eager_env: WorkflowEnvironment,  # noqa: F811
    fake_anthropic: FakeAnthropic,
    tmp_path: Path,
) -> None:
    client = eager_env.client
    alice = Signer("alice")
    key = new_key()
    steps = [fake.tool_calls(("list_files", {"path": "."}))] * 15
    fake_anthropic.script(key, [*steps, fake.tool_calls(WRITE_A), fake.text("All done.")])
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    request = keyed_request(key, [alice.entry()])
    request["agent"]["max_iterations"] = 20

    async with running_worker(client, settings, fake_anthropic):
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            request,
            id=f"turn-{uuid.uuid4()}",
            task_queue=settings.task_queue,
            result_type=AgentReport,
        )
        await wait_for_iteration(handle)
        early = {"call_id": "toolu_early", "approved": True, "approver": "alice"}
        await handle.signal(SIGNAL_APPROVE, early)
        await wait_refused(handle, 1)
        refused_in = (await handle.describe()).run_id
        [pending] = (await wait_for_pending(handle)).pending
        status = await status_of(handle)
        approved_in = (await handle.describe()).run_id
        decision = {"call_id": pending.call_id, "approved": True}
        await handle.signal(SIGNAL_APPROVE, alice.sign(decision, handle))
        report = await handle.result()

    assert refused_in != approved_in  # the turn continued as new in between
    assert [r.call_id for r in status.refused_decisions] == ["toolu_early"]
    assert report.output == "All done." and report.decisions[0].signed
