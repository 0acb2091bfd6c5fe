"""Replaying alice's signed decisions, as an attacker who can signal the namespace would, against
`python worker.py`. The attacker never holds alice's key: he copies a payload she signed (from
`turnkeeper approve --print`, a ticket, the turn's history) and sends it again, altered where the
signature would not notice, at a moment it would approve something she never saw."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import new_key, temporal_binary
from tests.fakes import fake_anthropic as fake
from tests.fakes import openai_replies as openai
from tests.fakes.fake_openai import FakeOpenAI
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

_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def one_bit_flipped(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with the lowest bit of its signature's last character flipped: that bit is
    padding (64 bytes are 86 characters and '=='), so the text differs and the bytes do not."""
    value = payload["signature"]["value"]
    assert value.endswith("==")
    last = _BASE64[_BASE64.index(value[-3]) ^ 1]
    signature = {**payload["signature"], "value": value[:-3] + last + "=="}
    return {**payload, "signature": signature}


async def signed_payload(
    stack: SystemStack, worker: WorkerProcess, key: Path, verb: str, *args: str
) -> dict[str, Any]:
    """What `turnkeeper approve|reject … --key K --print` writes: alice's signed payload."""
    printed = await stack.turnkeeper(
        verb, *args, "--approver", "alice", "--key", str(key), "--print", worker=worker
    )
    return json.loads(printed.stdout)


async def signal(stack: SystemStack, workflow_id: str, payload: dict[str, Any]) -> None:
    await stack.temporal(
        "workflow", "signal", "--workflow-id", workflow_id, "--name", "approve",
        "--input", json.dumps(payload),
    )  # fmt: skip


async def decide(
    stack: SystemStack, workflow_id: str, payload: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    """The `decide` update through the `temporal` CLI; its exit code says whether it applied."""
    command = [
        temporal_binary("temporal"), "workflow", "update", "execute", "--workflow-id",
        workflow_id, "--name", "decide", "--input", json.dumps(payload),
        "--address", stack.address,
    ]  # fmt: skip
    return await run(command)


async def refused_or_decided(stack: SystemStack, workflow_id: str, call_id: str, count: int) -> Any:
    """Waits until the turn has refused `count` signals or no longer waits on `call_id`."""

    def handled(seen: dict[str, Any]) -> bool:
        waiting = {call["call_id"] for call in seen.get("pending") or []}
        return len(seen.get("refused_decisions") or []) >= count or call_id not in waiting

    return await until(lambda: status(stack, workflow_id), handled, f"{call_id} handled")


async def test_a_used_star_with_one_bit_flipped_decides_nothing(
    stack: SystemStack, tmp_path: Path
) -> None:
    worker = await stack.start_worker()
    private, public = keypair(tmp_path)
    key = new_key()
    stack.fake.script(
        key,
        [
            fake.tool_calls(
                ("write_file", {"path": "a.md", "content": "A"}),
                ("write_file", {"path": "b.md", "content": "B"}),
            ),
            fake.tool_calls(("write_file", {"path": "c.md", "content": "MALLORY"})),
            fake.text("Done."),
        ],
    )
    request = turn_request(key)
    request["agent"]["approvers"] = [{"name": "alice", "public_key": public}]
    workflow_id = await start(stack, worker, request)

    await wait_for_state(stack, workflow_id, "awaiting_approval")
    star = await signed_payload(stack, worker, private, "approve", workflow_id, "all")
    await signal(stack, workflow_id, star)  # alice approves both writes she saw
    round_two = await until(
        lambda: status(stack, workflow_id),
        lambda seen: [c["input"]["path"] for c in seen.get("pending") or []] == ["c.md"],
        "the second round's write waits",
    )
    [call] = round_two["pending"]

    # The attacker's copy of alice's '*', one padding bit changed: by update, then by signal.
    flipped = one_bit_flipped(star)
    by_update = await decide(stack, workflow_id, flipped)
    await signal(stack, workflow_id, flipped)
    after = await refused_or_decided(stack, workflow_id, call["call_id"], 1)
    reject = await signed_payload(
        stack, worker, private, "reject", workflow_id, call["call_id"], "--reason", "no"
    )
    await signal(stack, workflow_id, reject)
    report = await result(stack, workflow_id)

    assert by_update.returncode != 0 and "canonical base64" in by_update.stderr
    assert [r["reason"] for r in after["refused_decisions"]] == [
        "alice's signature value is not canonical base64 (its unused bits must be zero)"
    ]
    assert not (worker.workspace / "c.md").exists()
    assert (worker.workspace / "a.md").read_text() == "A"
    assert report["outcome"] == "completed"
    assert [(d["approved"], d["signed"]) for d in report["decisions"]] == [(True, True)] * 2 + [
        (False, True)
    ]


def openai_worker_env(fake_openai: FakeOpenAI) -> dict[str, str]:
    """A worker whose `local:` models are an OpenAI-compatible server (the fake), as a user
    configures a local server in TURNKEEPER_PROVIDERS."""
    endpoint = {"kind": "openai", "base_url": f"{fake_openai.base_url}/v1"}
    return {"TURNKEEPER_PROVIDERS": json.dumps({"local": endpoint})}


def write_call(call_id: str, path: str, content: str) -> dict[str, Any]:
    arguments = json.dumps({"path": path, "content": content})
    return {"id": call_id, "function": {"name": "write_file", "arguments": arguments}}


async def test_a_reused_tool_call_id_is_an_error_and_takes_no_copied_approval(
    stack: SystemStack, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    # Local OpenAI-compatible servers number calls per answer: `call_0` comes back each round.
    worker = await stack.start_worker(env=openai_worker_env(fake_openai))
    private, public = keypair(tmp_path)
    key = new_key()
    fake_openai.script(
        key,
        [
            openai.ChatReply(None, (write_call("call_0", "note.md", "harmless"),), "tool_calls"),
            openai.ChatReply(
                None,
                (
                    write_call("call_0", "note.md", "MALLORY"),
                    write_call("call_1", "other.md", "other"),
                ),
                "tool_calls",
            ),
            openai.text("Done."),
        ],
    )
    request = turn_request(key)
    keyed = {"model": "local:qwen3", "approvers": [{"name": "alice", "public_key": public}]}
    request["agent"] |= keyed
    workflow_id = await start(stack, worker, request)

    await wait_for_state(stack, workflow_id, "awaiting_approval")
    approval = await signed_payload(stack, worker, private, "approve", workflow_id, "call_0")
    await signal(stack, workflow_id, approval)
    await until(
        lambda: status(stack, workflow_id),
        lambda seen: "call_1" in {c["call_id"] for c in seen.get("pending") or []},
        "the second round's calls wait",
    )
    await signal(stack, workflow_id, approval)  # the attacker's copy, for the new call_0
    after = await refused_or_decided(stack, workflow_id, "call_0", 1)
    await stack.turnkeeper(
        "reject", workflow_id, "call_1", "--approver", "alice", "--key", str(private),
        "--reason", "not now", worker=worker,
    )  # fmt: skip
    report = await result(stack, workflow_id)

    assert (worker.workspace / "note.md").read_text() == "harmless"
    assert [(r["call_id"], r["reason"]) for r in after["refused_decisions"]] == [
        ("call_0", "call 'call_0': already decided")
    ]
    reused = [
        block
        for message in report["messages"]
        for block in message["content"]
        if block["type"] == "tool_result" and block["tool_use_id"] == "call_0"
    ][1]
    assert reused["is_error"] and "was used already" in reused["content"]
    assert [(d["call_id"], d["approved"]) for d in report["decisions"]] == [
        ("call_0", True),
        ("call_1", False),
    ]


async def test_an_approval_does_not_carry_over_to_the_next_turn_of_a_workflow_id(
    stack: SystemStack, tmp_path: Path
) -> None:
    # A workflow id may be used again once its turn ended; a call id may come again with it.
    worker = await stack.start_worker()
    private, public = keypair(tmp_path)
    first, second = new_key(), new_key()

    def write(content: str) -> fake.Reply:
        use = {"type": "tool_use", "id": "toolu_same", "name": "write_file"}
        use["input"] = {"path": "note.md", "content": content}
        return fake.MessageReply(content=(use,), stop_reason="tool_use")

    stack.fake.script(first, [write("harmless"), fake.text("Saved.")])
    stack.fake.script(second, [write("MALLORY"), fake.text("Saved.")])
    approvers = [{"name": "alice", "public_key": public}]
    request = turn_request(first)
    request["agent"]["approvers"] = approvers
    workflow_id = await start(stack, worker, request)
    await wait_for_state(stack, workflow_id, "awaiting_approval")
    approval = await signed_payload(stack, worker, private, "approve", workflow_id, "toolu_same")
    await signal(stack, workflow_id, approval)
    await result(stack, workflow_id)

    again = turn_request(second)
    again["agent"]["approvers"] = approvers
    again["task"]["id"] = request["task"]["id"]  # the same workflow id
    await start(stack, worker, again)
    await wait_for_state(stack, workflow_id, "awaiting_approval")
    await signal(stack, workflow_id, approval)  # the attacker's copy of the first turn's
    after = await refused_or_decided(stack, workflow_id, "toolu_same", 1)
    await stack.turnkeeper(
        "reject", workflow_id, "toolu_same", "--approver", "alice", "--key", str(private),
        "--reason", "not this", worker=worker,
    )  # fmt: skip
    await result(stack, workflow_id)

    assert (worker.workspace / "note.md").read_text() == "harmless"
    [refused] = after["refused_decisions"]
    assert "signature does not verify" in refused["reason"]
