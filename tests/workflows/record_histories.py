"""Records the golden histories that `tests/unit/workflows/test_replay.py` replays.

Run it only when a deliberate change needs a new golden history, and keep the old files: every
history recorded by a released version must keep replaying.

    python -m tests.workflows.record_histories v3 [scenario ...] [--encrypted]

The first argument names the recording (files are `<scenario>-<version>.json`); the others pick
scenarios (default: all of them). `--encrypted` records through the converter of an encrypted
deployment (`tests/support/golden_keys.py`): payloads encrypted, large ones kept in
`tests/histories/store`, files named `<scenario>-<version>-encrypted.json`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import inspect
import json
import re
import sys
import tempfile
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from turnkeeper.activities.output.validators import (
    OutputRejected,
    OutputValidators,
    output_validator,
)
from turnkeeper.contracts.decision_signing import public_key_line
from turnkeeper.contracts.evals import EVAL_RUN_WORKFLOW_TYPE
from turnkeeper.contracts.names import (
    QUERY_STATUS,
    SEARCH_ATTRIBUTES,
    SESSION_WORKFLOW_TYPE,
    SIGNAL_APPROVE,
    SIGNAL_SUBMIT_TOOL_RESULT,
    UPDATE_CANCEL,
    UPDATE_DECIDE,
    UPDATE_EXTEND_BUDGET,
    UPDATE_INTERRUPT,
    UPDATE_STEER,
)
from turnkeeper.contracts.rate_limits import (
    RATE_LIMITER_WORKFLOW,
    RateLimit,
    RateLimiterInput,
    rate_limiter_id,
)
from turnkeeper.contracts.search_attributes import STARTED_BY
from turnkeeper.contracts.session import SessionRequest
from turnkeeper.contracts.signals import ApproveInput, TurnStatus
from turnkeeper.contracts.steering import CancelInput, SteerInput
from turnkeeper.contracts.tenants import TenantCaps
from turnkeeper.contracts.waits import SIGNAL_EVENT
from turnkeeper.workflows.llm.compaction import SUMMARY_INSTRUCTIONS

from tests.conftest import (
    SA_KEYS,
    make_settings,
    providers_for,
    running_worker,
    scripted_request,
    temporal_binary,
    wait_for_pending,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes import openai_replies as openai
from tests.fakes.fake_anthropic import FakeAnthropic, start_fake_anthropic
from tests.fakes.fake_openai import FakeOpenAI, start_fake_openai
from tests.support.attachment_files import png_of
from tests.support.golden_keys import golden_converter
from tests.support.interop import npm_bin
from tests.support.mcp_http_process import (
    A2A_AGENT,
    ASKING_SERVER,
    TASK_SERVER,
    HttpServerProcess,
)
from tests.support.policy_files import write_policies
from tests.support.skill_folders import REFUND_POLICY, REFUNDS, skills_worker
from tests.support.waiting import until
from turnkeeper.client.sessions import SessionHandle, start_session
from turnkeeper.client.signatures import signed_intervention
from turnkeeper.client.tenants import set_caps

HISTORIES = Path(__file__).parent.parent / "histories"
ASK_USER = {"name": "ask_user", "input_schema": {"type": "object"}}


async def approval_and_external(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """Three iterations: parallel tools with an external call, then an approval and an unknown
    tool, then the answer."""
    fake_api.script(
        "golden1",
        [
            fake.tool_calls(("list_files", {"path": "."}), ("ask_user", {"question": "Topic?"})),
            fake.tool_calls(
                ("write_file", {"path": "summary.md", "content": "# Summary\n"}),
                ("no_such_tool", {}),
            ),
            fake.text("Saved the summary."),
        ],
    )
    request = scripted_request("golden1", external_tools=[ASK_USER])
    handle = await _start(client, request, queue, workflow_id)
    [pending] = (await wait_for_pending(handle)).pending
    await handle.signal(SIGNAL_SUBMIT_TOOL_RESULT, {"call_id": pending.call_id, "output": "cats"})
    await asyncio.sleep(0.5)
    [pending] = (await wait_for_pending(handle)).pending
    await handle.signal(SIGNAL_APPROVE, {"call_id": pending.call_id, "approved": True})
    await handle.result()
    return handle


async def reads_a_large_file(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A tool output over 1 KiB: it travels as an external-storage reference."""
    fake_api.script(
        "golden5", [fake.tool_calls(("read_file", {"path": "ledger.md"})), fake.text("Read.")]
    )
    handle = await _start(client, scripted_request("golden5"), queue, workflow_id)
    await handle.result()
    return handle


async def max_iterations(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    fake_api.script("golden2", [fake.tool_calls(("list_files", {"path": "."}))] * 2)
    request = scripted_request("golden2", agent={"max_iterations": 2})
    handle = await _start(client, request, queue, workflow_id)
    with contextlib.suppress(WorkflowFailureError):
        await handle.result()
    return handle


async def decided_with_an_edit(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """Two approvals decided through the `decide` update, one edited, one remembered."""
    fake_api.script(
        "golden3",
        [
            fake.tool_calls(
                ("write_file", {"path": "a.md", "content": "A"}),
                ("write_file", {"path": "b.md", "content": "B"}),
            ),
            fake.text("Both handled."),
        ],
    )
    request = scripted_request("golden3", agent={"id": "golden-agent"})
    handle = await _start(client, request, queue, workflow_id)
    first, second = (await wait_for_pending(handle, count=2)).pending
    edit = {"path": "a-reviewed.md", "content": "A, reviewed"}
    await handle.execute_update(
        UPDATE_DECIDE, {"call_id": first.call_id, "approved": True, "input": edit}
    )
    await handle.execute_update(
        UPDATE_DECIDE, {"call_id": second.call_id, "approved": True, "remember": True}
    )
    await handle.result()
    return handle


async def previews_a_write(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A write_file call with words before it: its diff against notes.md is read on the worker
    before it waits (`write_preview`), then it is approved."""
    write = ("write_file", {"path": "notes.md", "content": "# Notes\nThe light was kept.\n"})
    fake_api.script(
        "golden13", [fake.tool_calls(write, text="Adding the log line."), fake.text("Saved.")]
    )
    handle = await _start(client, scripted_request("golden13"), queue, workflow_id)
    [pending] = (await wait_for_pending(handle)).pending
    assert pending.preview is not None and "+The light was kept." in pending.preview.diff
    assert pending.said == "Adding the log line."
    await handle.execute_update(UPDATE_DECIDE, {"call_id": pending.call_id, "approved": True})
    await handle.result()
    return handle


async def runs_code_in_a_sandbox(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """run_python writes a file, seeded from the workspace, and run_shell reads it in the next
    iteration: the second `sandbox_call` gets the folder the first one stored."""
    write = ("run_python", {"code": "open('out.md', 'w').write(open('notes.md').read() * 2)"})
    read = ("run_shell", {"command": "cat out.md"})
    fake_api.script(
        "golden14", [fake.tool_calls(write), fake.tool_calls(read), fake.text("Doubled.")]
    )
    agent = {"tools": ["run_python", "run_shell"], "sandbox": {"files": ["notes.md"]}}
    handle = await _start(client, scripted_request("golden14", agent=agent), queue, workflow_id)
    report = await handle.result()
    assert report["sandbox"]["files"] == ["notes.md", "out.md"]
    return handle


async def signed_decisions(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A turn whose approver has a key: an unsigned, a garbage-signed and an expired decision are
    refused, then one call is approved by a signed signal and the other remembered through a
    signed `decide` update."""
    fake_api.script(
        "golden4",
        [
            fake.tool_calls(
                ("write_file", {"path": "a.md", "content": "A"}),
                ("write_file", {"path": "b.md", "content": "B"}),
            ),
            fake.text("Both saved."),
        ],
    )
    alice = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    approvers = [{"name": "alice", "public_key": public_key_line(alice)}]
    request = scripted_request("golden4", agent={"id": "golden-signed", "approvers": approvers})
    handle = await _start(client, request, queue, workflow_id)
    first, second = (await wait_for_pending(handle, count=2)).pending
    now = datetime.now(UTC)

    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)

    def signed(call_id: str, expires: datetime, **fields: Any) -> dict[str, Any]:
        """Signed for what the turn shows waiting, in the format it verifies (as clients do)."""
        decision = ApproveInput(call_id=call_id, approved=True, approver="alice", **fields)
        call = status.signed_call(handle.id, call_id)
        assert call is not None
        signed = decision.signed_with(alice, call, expires, status.signing_version)
        return signed.model_dump(mode="json")

    unsigned = {"call_id": first.call_id, "approved": True, "approver": "alice"}
    garbage = {**signed(first.call_id, now + timedelta(minutes=10)), "reason": "altered"}
    expired = signed(first.call_id, now - timedelta(minutes=1))
    for refused in (unsigned, garbage, expired):
        await handle.signal(SIGNAL_APPROVE, refused)
    await handle.signal(SIGNAL_APPROVE, signed(first.call_id, now + timedelta(minutes=10)))
    remember = signed(second.call_id, now + timedelta(minutes=10), remember=True)
    await handle.execute_update(UPDATE_DECIDE, remember)
    await handle.result()
    return handle


async def session_of_two_turns(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A session (its workflow id is the file's stem): two sends, each a child turn that
    continues the conversation by reference, then `close`."""
    fake_api.script("golden8", [fake.text("Hello, Ada."), fake.text("Your name is Ada.")])
    agent = scripted_request("golden8", agent={"id": "golden-session"})["agent"]
    session = await start_session(
        client,
        session_id=workflow_id,
        agent=agent,
        constraints={"cost_budget_usd": 1},
        task_queue=queue,
    )
    for text in ("My name is Ada.", "What is my name?"):
        await (await session.send(text)).result()
    return await _closed(session)


async def owned_session(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A session started with an owner (`StartedBy`), as `turnkeeper serve --agents` starts a
    conversation: its turn is started with the same `StartedBy`."""
    fake_api.script("golden13", [fake.text("Hello, Ada.")])
    agent = scripted_request("golden13", agent={"id": "golden-session", "stream": True})["agent"]
    request = SessionRequest.model_validate({"session_id": workflow_id, "agent": agent})
    handle = await client.start_workflow(
        SESSION_WORKFLOW_TYPE,
        request.model_dump(mode="json", exclude_defaults=True),
        id=workflow_id,
        task_queue=queue,
        search_attributes=TypedSearchAttributes([SearchAttributePair(STARTED_BY, "ada")]),
    )
    session = SessionHandle(client, handle)
    await (await session.send("My name is Ada.")).result()
    return await _closed(session)


async def session_with_an_extended_turn(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A session (its workflow id is the file's stem) whose turn pauses on its spent cost
    budget: the turn tells the session (`turn_state`), a human extends the turn, and the
    session counts the extension into its own budget."""
    pricey = {"input_per_mtok": 10_000.0, "output_per_mtok": 100_000.0}
    usage = {"input_tokens": 20, "output_tokens": 3}
    fake_api.script(
        "golden11",
        [
            fake.tool_calls(("list_files", {"path": "."}), usage=usage),
            fake.text("Listed them.", usage=usage),
        ],
    )
    agent = scripted_request("golden11", agent={"id": "golden-session", "price": pricey})["agent"]
    session = await start_session(
        client,
        session_id=workflow_id,
        agent=agent,
        constraints={"cost_budget_usd": 0.4, "on_budget_exhausted": "pause"},
        task_queue=queue,
    )
    turn = await session.send("List the files")
    await _wait_for_budget_request(turn.workflow, 1)
    await turn.extend_budget(cost_usd=1, approver="alice")
    await turn.result()
    return await _closed(session)


async def _closed(session: Any) -> Any:
    """Closes the session once it has recorded its last turn's end; its workflow handle."""
    for _ in range(100):
        if (await session.status()).running_turn_id is None:
            break
        await asyncio.sleep(0.05)
    await session.close("recorded")
    await session.workflow.result()
    return session.workflow


async def paused_and_extended(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A pausing turn: its cost budget is spent after the first call and extended through the
    `extend_budget` update, then its iterations run out and are extended too."""
    pricey = {"input_per_mtok": 10_000.0, "output_per_mtok": 100_000.0}
    usage = {"input_tokens": 20, "output_tokens": 3}
    fake_api.script(
        "golden6",
        [
            fake.tool_calls(("list_files", {"path": "."}), usage=usage),
            fake.tool_calls(("read_file", {"path": "notes.md"}), usage=usage),
            fake.text("Read the notes.", usage=usage),
        ],
    )
    constraints = {"cost_budget_usd": 0.4, "on_budget_exhausted": "pause"}
    request = scripted_request(
        "golden6",
        agent={"price": pricey, "max_iterations": 2},
        task={"constraints": constraints},
    )
    handle = await _start(client, request, queue, workflow_id)
    await _wait_for_budget_request(handle, 1)
    await handle.execute_update(
        UPDATE_EXTEND_BUDGET, {"cost_usd": 5, "approver": "alice", "reason": "worth it"}
    )
    await _wait_for_budget_request(handle, 2)
    await handle.execute_update(UPDATE_EXTEND_BUDGET, {"iterations": 1, "approver": "alice"})
    await handle.result()
    return handle


async def compacted(client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str) -> Any:
    """A turn with `agent.compaction` (summarize) that reads the ledger six times under a limit
    that holds about three reads: its early exchanges are summarized by a model call."""
    calls = iter(range(1, 100))

    def reply(body: dict[str, Any]) -> fake.Reply:
        if fake.system_text(body.get("system")) == SUMMARY_INSTRUCTIONS:
            return fake.text("The agent read ledger.md; it lists 60 entries about the light.")
        n = next(calls)
        if n > 6:
            return fake.text("Read the ledger six times.")
        use = {"type": "tool_use", "id": f"toolu_ledger_{n}", "name": "read_file"}
        return fake.MessageReply(({**use, "input": {"path": "ledger.md"}},), "tool_use")

    fake_api.script("golden7", [reply] * 10)
    request = scripted_request(
        "golden7",
        agent={
            "tools": ["read_file"],
            "compaction": {"strategy": "summarize", "max_input_tokens": 2000},
        },
        task={"input": f"Read ledger.md six times. {fake.script_marker('golden7')}"},
    )
    handle = await _start(client, request, queue, workflow_id)
    await handle.result()
    return handle


async def compacted_session_turn(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A turn that continues an earlier turn's conversation by reference (as a session's turns
    do) with `agent.compaction` (summarize): it reads the earlier conversation, summarizes
    exchanges of the earlier turn too (the summary call through the fallback chain), and
    stores the whole conversation when it ends."""
    calls = iter(range(1, 100))
    left = 0

    def reply(body: dict[str, Any]) -> fake.Reply:
        nonlocal left
        if fake.system_text(body.get("system")) == SUMMARY_INSTRUCTIONS:
            return fake.text("The agent read ledger.md; it lists 60 entries.")
        last = body["messages"][-1]["content"]
        if not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last):
            left = 2  # a turn begins: two reads
        if left == 0:
            return fake.text("Read the ledger twice.")
        left -= 1
        use = {"type": "tool_use", "id": f"toolu_ledger_{next(calls)}", "name": "read_file"}
        return fake.MessageReply(({**use, "input": {"path": "ledger.md"}},), "tool_use")

    fake_api.script("golden10", [reply] * 20)
    agent = {
        "tools": ["read_file"],
        "compaction": {"strategy": "summarize", "max_input_tokens": 2000},
    }
    # The summary call has a system prompt of its own: the fake finds the script here.
    first_input = f"Read ledger.md twice. {fake.script_marker('golden10')}"
    earlier = await _start(
        client,
        scripted_request("golden10", agent=agent, task={"input": first_input}),
        queue,
        f"{workflow_id}-earlier",
    )
    report = await earlier.result()
    request = scripted_request(
        "golden10",
        agent=agent,
        task={"input": "Read it twice more."},
        history_ref=report["conversation_ref"],
    )
    handle = await _start(client, request, queue, workflow_id)
    await handle.result()
    return handle


async def _wait_for_budget_request(handle: WorkflowHandle, number: int) -> None:
    for _ in range(200):
        status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
        if status.budget_request is not None and status.budget_request.number == number:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"budget request {number} never came; last status {status}")


async def falls_back_across_providers(
    client: Client,
    fake_api: FakeAnthropic,
    queue: str,
    workflow_id: str,
    *,
    openai_api: FakeOpenAI,
) -> Any:
    """The Anthropic primary is dead (529): two attempts, then the OpenAI fallback answers
    with a tool call; the next iteration passes the primary over (cooling down), and the
    fallback answers. Prompt caching is on (the default)."""
    fake_api.script("golden9", [fake.overloaded()] * 2)
    openai_api.script(
        "golden9",
        [openai.tool_calls(("list_files", {"path": "."})), openai.text("Listed on OpenAI.")],
    )
    agent = {"id": "golden-fallback", "fallback_models": ["openai:gpt-4.1"]}
    handle = await _start(client, scripted_request("golden9", agent=agent), queue, workflow_id)
    await handle.result()
    return handle


async def internal_error(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A defect of ours in the model-call activity (a token count without `input_tokens` under a
    cost budget): the turn fails at once with TurnInternalError, behind its patch marker."""
    fake_api.script("golden12", [fake.text("never reached")])
    fake_api.script_count_tokens("golden12", fake.RawReply(200, b"{}"))
    request = scripted_request("golden12", task={"constraints": {"cost_budget_usd": 1.0}})
    handle = await _start(client, request, queue, workflow_id)
    with contextlib.suppress(WorkflowFailureError):
        await handle.result()
    return handle


async def steered(client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str) -> Any:
    """A steer sent while a call waits for approval joins the tool result before the next
    model call."""
    fake_api.script(
        "golden13",
        [fake.tool_calls(("write_file", {"path": "s.md", "content": "S"})), fake.text("Done.")],
    )
    handle = await _start(client, scripted_request("golden13"), queue, workflow_id)
    [pending] = (await wait_for_pending(handle)).pending
    await handle.execute_update(UPDATE_STEER, {"message": "Keep it short.", "author": "alice"})
    await handle.execute_update(UPDATE_DECIDE, {"call_id": pending.call_id, "approved": True})
    await handle.result()
    return handle


async def interrupted(client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str) -> Any:
    """An interrupt while a call waits for approval ends the turn with outcome interrupted."""
    fake_api.script(
        "golden14",
        [fake.tool_calls(("write_file", {"path": "i.md", "content": "I"})), fake.text("never")],
    )
    handle = await _start(client, scripted_request("golden14"), queue, workflow_id)
    await wait_for_pending(handle)
    await handle.execute_update(UPDATE_INTERRUPT, {"reason": "wrong file", "author": "bob"})
    await handle.result()
    return handle


async def signed_cancel(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A keyed turn waiting for an approval takes alice's signed steer, refuses an unsigned
    cancel, and ends cancelled by her signed `cancel` update (format 3, bound to its first
    run), which asks Temporal for the cancellation through the `cancel_turn` activity."""
    fake_api.script(
        "golden19",
        [fake.tool_calls(("write_file", {"path": "c.md", "content": "C"})), fake.text("never")],
    )
    alice = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    approvers = [{"name": "alice", "public_key": public_key_line(alice)}]
    request = scripted_request("golden19", agent={"id": "golden-cancel", "approvers": approvers})
    handle = await _start(client, request, queue, workflow_id)
    status = await wait_for_pending(handle)
    lifetime = timedelta(minutes=10)
    steer = SteerInput(message="Keep it short.", author="alice")
    signed_steer = signed_intervention(steer, status, handle.id, alice, lifetime)
    await handle.execute_update(UPDATE_STEER, signed_steer.model_dump(mode="json"))
    with contextlib.suppress(WorkflowUpdateFailedError):
        await handle.execute_update(UPDATE_CANCEL, {"reason": "unsigned", "author": "alice"})
    cancel = CancelInput(reason="wrong file", author="alice")
    signed_cancel = signed_intervention(cancel, status, handle.id, alice, lifetime)
    await handle.execute_update(UPDATE_CANCEL, signed_cancel.model_dump(mode="json"))
    with contextlib.suppress(WorkflowFailureError):
        await handle.result()
    return handle


async def subagents(client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str) -> Any:
    """A lead agent calls two sub-agents in one answer: the researcher lists files, the
    writer's `write_file` waits for approval, which reaches the lead's status and is approved
    there (the `approve` signal sent on to the child); then the lead answers."""
    fake_api.script(
        "golden13",
        [
            fake.tool_calls(
                ("researcher", {"task": "List the notes"}), ("writer", {"task": "Save a summary"})
            ),
            fake.text("Both specialists are done."),
        ],
    )
    fake_api.script(
        "golden14", [fake.tool_calls(("list_files", {"path": "."})), fake.text("notes.md")]
    )
    fake_api.script(
        "golden15",
        [
            fake.tool_calls(("write_file", {"path": "summary.md", "content": "# Summary\n"})),
            fake.text("Saved."),
        ],
    )

    def specialist(name: str, key: str, tools: list[str]) -> dict[str, Any]:
        agent = scripted_request(key, agent={"id": f"golden-{name}", "tools": tools})["agent"]
        return {"name": name, "description": f"The {name}.", "agent": agent}

    request = scripted_request(
        "golden13",
        agent={
            "tools": [],
            "subagents": [
                specialist("researcher", "golden14", ["list_files"]),
                specialist("writer", "golden15", ["write_file"]),
            ],
        },
        task={"constraints": {"cost_budget_usd": 1, "time_budget_ms": 600_000}},
    )
    handle = await _start(client, request, queue, workflow_id)
    [pending] = (await wait_for_pending(handle)).pending
    approve = {"call_id": pending.call_id, "approved": True, "approver": "alice"}
    await handle.signal(SIGNAL_APPROVE, approve)
    await handle.result()
    return handle


@output_validator
def no_digits(text: str) -> None:
    """The golden worker's output validator: numbers in words."""
    if any(character.isdigit() for character in text):
        raise OutputRejected("write numbers out in words")


async def rejected_then_accepted(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A structured answer that fits the schema but an output validator rejects: the model is
    corrected, and its next answer is accepted (the validators checked at the start too)."""
    fake_api.script(
        "golden15", [fake.text('{"answer": "42"}'), fake.text('{"answer": "forty-two"}')]
    )
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    agent = {"output_schema": schema, "output_validators": ["no_digits"]}
    handle = await _start(client, scripted_request("golden15", agent=agent), queue, workflow_id)
    await handle.result()
    return handle


async def guarded_by_guardrails(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A turn with `agent.guardrails` (the built-in `secrets` enforced, `size_cap` log-only):
    a key-shaped string is redacted from the task input and the answer, and a tool result passes;
    each check is a `check_guardrails` activity whose verdicts the turn records."""
    key = "AKIA" + "GOLDEN" * 2 + "0000"
    fake_api.script(
        "golden-guardrails",
        [fake.tool_calls(("read_file", {"path": "notes.md"})), fake.text(f"The key is {key}.")],
    )
    agent = {
        "tools": ["read_file"],
        "guardrails": ["secrets", {"name": "size_cap", "mode": "log_only"}],
    }
    task = {"input": f"Read notes.md; the key is {key}."}
    request = scripted_request("golden-guardrails", agent=agent, task=task)
    handle = await _start(client, request, queue, workflow_id)
    await handle.result()
    return handle


async def tenant_paused_and_raised(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A pausing turn of a tenant whose daily cap is 0: its first call is refused before the
    provider, it waits in `awaiting_budget`, and `tenants set` raising the cap wakes it (the
    ledger's signal); its activities carry the tenant as their fairness key."""
    usage = {"input_tokens": 20, "output_tokens": 3}
    fake_api.script(
        "golden13",
        [fake.tool_calls(("list_files", {"path": "."}), usage=usage), fake.text("Listed.")],
    )
    await set_caps(client, "golden-tenant", TenantCaps(usd_per_day=0), queue)
    request = scripted_request(
        "golden13",
        agent={"price": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}},
        task={"constraints": {"on_budget_exhausted": "pause"}},
        tenant="golden-tenant",
    )
    handle = await _start(client, request, queue, workflow_id)
    await _wait_for_budget_request(handle, 1)
    await set_caps(client, "golden-tenant", TenantCaps(usd_per_day=5), queue)
    await handle.result()
    return handle


async def rate_limited(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A turn whose model call waits for fleet capacity (TURNKEEPER_RATE_LIMITS, 1 request per
    window of a ledger started with a 5-second window): its `capacity_wait` signal and the
    result's `capacity_wait_ms`, on a worker of its own with the limit set."""
    model = f"anthropic:golden-{uuid.uuid4().hex[:6]}"
    fake_api.script("golden13", [fake.text("first")])
    fake_api.script("golden14", [fake.text("second")])
    with tempfile.TemporaryDirectory() as tmp:
        limited = make_settings(Path(tmp), f"golden-limited-{uuid.uuid4()}")
        limited = dataclasses.replace(
            limited, rate_limits={model: RateLimit(requests_per_minute=1)}
        )
        async with running_worker(client, limited, fake_api):
            ledger = await client.start_workflow(
                RATE_LIMITER_WORKFLOW,
                RateLimiterInput(key=model, window_ms=5_000),
                id=rate_limiter_id(model),
                task_queue=limited.task_queue,
            )
            first = scripted_request("golden13", agent={"model": model})
            await (await _start(client, first, limited.task_queue, f"{workflow_id}-first")).result()
            second = scripted_request("golden14", agent={"model": model})
            handle = await _start(client, second, limited.task_queue, workflow_id)
            await handle.result()
            await ledger.terminate("recorded")
    return handle


async def loads_a_skill(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A turn with `agent.skills`: the worker describes the skill at the start, the model loads
    it, then calls the tool it brings (and `load_skill` on a skill the agent lacks, refused
    without running), on a worker of its own that has the skill."""
    fake_api.script(
        "golden-skills",
        [
            fake.tool_calls(("load_skill", {"name": REFUND_POLICY})),
            fake.tool_calls(("load_skill", {"name": "payroll"}), ("refund", {"order": "A17"})),
            fake.text("Refunded A17."),
        ],
    )
    request = scripted_request("golden-skills", agent={"skills": [REFUND_POLICY]})
    with tempfile.TemporaryDirectory() as tmp:
        skilled = make_settings(Path(tmp), f"golden-skills-{uuid.uuid4()}")
        async with skills_worker(client, skilled, providers_for(fake_api), [REFUNDS]):
            handle = await _start(client, request, skilled.task_queue, workflow_id)
            await handle.result()
    return handle


async def follows_an_mcp_task(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """An MCP server (the 2026-07-28 tasks extension) answers a tool call with a task: the turn
    polls it between timers to its result, on a worker of its own that has the server."""
    fake_api.script(
        "golden-mcp-task",
        [
            fake.tool_calls(("mcp__lab__research", {"topic": "tides", "seconds": 1.5})),
            fake.text("Researched."),
        ],
    )
    request = scripted_request("golden-mcp-task", agent={"tools": ["mcp__lab__research"]})
    server = HttpServerProcess(script=TASK_SERVER)
    await server.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "mcp.json"
            config.write_text(json.dumps({"servers": {"lab": {"url": server.url}}}))
            settings = make_settings(Path(tmp), f"golden-mcp-{uuid.uuid4()}")
            settings = dataclasses.replace(settings, mcp_config=config)
            async with running_worker(client, settings, fake_api):
                handle = await _start(client, request, settings.task_queue, workflow_id)
                await handle.result()
    finally:
        await server.kill()
    return handle


def answers_the_remote_question(body: dict[str, Any]) -> fake.Reply:
    """The model reads the task id in the remote agent's question (the last tool results) and
    answers it into the same task."""
    asked = json.dumps(body["messages"][-1]["content"])
    task_id = re.search(r'\\"task_id\\": \\"([0-9a-f-]+)\\"', asked)
    assert task_id, asked
    return fake.tool_calls(("lab", {"message": "Paris", "task_id": task_id.group(1)}))


async def calls_a_remote_a2a_agent(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """Two calls of a remote A2A agent (a2a-sdk's own server) in parallel: a task followed
    between timers to its artifact, and one that asks for input, answered by the model's next
    call into the same task; on a worker of its own that has the agent."""
    fake_api.script(
        "golden-a2a",
        [
            fake.tool_calls(
                ("lab", {"message": "research 1.5 tides"}), ("lab", {"message": "ask"})
            ),
            answers_the_remote_question,
            fake.text("Researched, and it is sunny in Paris."),
        ],
    )
    request = scripted_request("golden-a2a", agent={"tools": [], "a2a_agents": ["lab"]})
    server = HttpServerProcess(script=A2A_AGENT)
    await server.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "a2a.json"
            config.write_text(json.dumps({"agents": {"lab": {"url": f"{server.base_url}/"}}}))
            settings = make_settings(Path(tmp), f"golden-a2a-{uuid.uuid4()}")
            settings = dataclasses.replace(settings, a2a_config=config)
            async with running_worker(client, settings, fake_api):
                handle = await _start(client, request, settings.task_queue, workflow_id)
                await handle.result()
    finally:
        await server.kill()
    return handle


async def asks_inside_mcp_tasks(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """Two MCP calls in parallel answered with tasks that ask a person: a 2026-07-28 task
    (`inputRequests` in `tasks/get`, answered with `tasks/update`) accepted, and a 2025-11-25 one
    (server-everything, `elicitation/create` on `tasks/result`) declined; on a worker of their
    own that has both servers."""
    clarify, query = "mcp__lab__clarify", "mcp__every__simulate-research-query"
    fake_api.script(
        "golden-mcp-task-questions",
        [
            fake.tool_calls(
                (clarify, {"topic": "tides"}), (query, {"topic": "x", "ambiguous": True})
            ),
            fake.text("Researched."),
        ],
    )
    request = scripted_request("golden-mcp-task-questions", agent={"tools": [clarify, query]})
    server = HttpServerProcess(script=TASK_SERVER)
    await server.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            servers = {
                "lab": {"url": server.url},
                "every": {"command": [str(npm_bin("mcp-server-everything")), "stdio"]},
            }
            config = Path(tmp) / "mcp.json"
            config.write_text(json.dumps({"servers": servers}))
            settings = make_settings(Path(tmp), f"golden-mcp-{uuid.uuid4()}")
            settings = dataclasses.replace(settings, mcp_config=config)
            async with running_worker(client, settings, fake_api):
                handle = await _start(client, request, settings.task_queue, workflow_id)
                pending = (await wait_for_pending(handle, count=2)).pending
                by_tool = {call.tool: call for call in pending}
                await handle.execute_update(
                    UPDATE_DECIDE,
                    {
                        "call_id": by_tool[clarify].call_id,
                        "approved": True,
                        "input": {"meaning": "ocean"},
                    },
                )
                await handle.execute_update(
                    UPDATE_DECIDE,
                    {"call_id": by_tool[query].call_id, "approved": False, "reason": "not now"},
                )
                await handle.result()
    finally:
        await server.kill()
    return handle


async def answered_mcp_questions(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """Two MCP calls in parallel whose servers ask a person: a 2026-07-28 server (the SDK's
    `MCPServer`, an `InputRequiredResult`) answered with an edit refused first, and a
    handshake-era one (server-everything, `elicitation/create` mid-call, the activity's
    `mcp_elicitation` update) declined; on a worker of their own that has both servers."""
    order, ask = "mcp__shop__order", "mcp__every__trigger-elicitation-request"
    fake_api.script(
        "golden-mcp-questions",
        [fake.tool_calls((order, {"item": "tea"}), (ask, {})), fake.text("Ordered.")],
    )
    request = scripted_request("golden-mcp-questions", agent={"tools": [order, ask]})
    with tempfile.TemporaryDirectory() as tmp:
        servers = {
            "shop": {"command": [sys.executable, str(ASKING_SERVER)]},
            "every": {"command": [str(npm_bin("mcp-server-everything")), "stdio"]},
        }
        config = Path(tmp) / "mcp.json"
        config.write_text(json.dumps({"servers": servers}))
        asking = dataclasses.replace(
            make_settings(Path(tmp), f"golden-mcp-{uuid.uuid4()}"), mcp_config=config
        )
        async with running_worker(client, asking, fake_api):
            handle = await _start(client, request, asking.task_queue, workflow_id)
            pending = (await wait_for_pending(handle, count=2)).pending
            by_tool = {call.tool: call for call in pending}
            with contextlib.suppress(WorkflowUpdateFailedError):  # refused: it does not fit
                await handle.execute_update(
                    UPDATE_DECIDE,
                    {"call_id": by_tool[order].call_id, "approved": True, "input": {}},
                )
            address = {"address": "1 Main St", "express": True}
            await handle.execute_update(
                UPDATE_DECIDE,
                {"call_id": by_tool[order].call_id, "approved": True, "input": address},
            )
            await handle.execute_update(
                UPDATE_DECIDE,
                {"call_id": by_tool[ask].call_id, "approved": False, "reason": "not now"},
            )
            await handle.result()
    return handle


async def checked_by_policies(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A turn with `agent.policy` on a worker of its own with a policy file: a forbidden read,
    a permitted one, and a listing the policy asks about, approved with an edit that a second
    check forbids (each decision a `check_policy` local activity)."""
    calls = (
        ("read_file", {"path": "secret.env"}),
        ("read_file", {"path": "notes.md"}),
        ("list_files", {"path": "."}),
    )
    fake_api.script("golden-policies", [fake.tool_calls(*calls), fake.text("Checked.")])
    agent = {"policy": {"mode": "enforce"}, "parallel_tool_calls": False}
    request = scripted_request("golden-policies", agent=agent)
    with tempfile.TemporaryDirectory() as tmp:
        checked = make_settings(Path(tmp), f"golden-policies-{uuid.uuid4()}")
        checked = dataclasses.replace(checked, policy_files=(write_policies(Path(tmp)),))
        (checked.workspace / "notes.md").write_text("# Notes\n")
        async with running_worker(client, checked, fake_api):
            handle = await _start(client, request, checked.task_queue, workflow_id)
            [pending] = (await wait_for_pending(handle)).pending
            edit = {"call_id": pending.call_id, "approved": True, "input": {"path": "private"}}
            await handle.execute_update(UPDATE_DECIDE, edit)
            await handle.result()
    return handle


async def waits_for_an_event(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """The built-in `wait` tool: a wait for an event that arrives (twice, a retry: dropped),
    then a timed wait that a steer ends early, then the answer."""
    fake_api.script(
        "golden40",
        [
            fake.tool_calls(("wait", {"event": "deploy-finished", "reason": "the deploy"})),
            fake.tool_calls(("wait", {"seconds": 86400, "reason": "a day of metrics"})),
            fake.text("Release notes written."),
        ],
    )
    request = scripted_request("golden40", agent={"tools": ["wait"]})
    handle = await _start(client, request, queue, workflow_id)
    event = {"key": "d-1", "event": "deploy-finished", "idempotency_id": "x", "payload": "ok"}
    await _until_waiting(handle)
    await handle.signal(SIGNAL_EVENT, event)
    await handle.signal(SIGNAL_EVENT, event)
    await _until_waiting(handle, call=1)
    await handle.execute_update(UPDATE_STEER, {"message": "Enough metrics.", "author": "alice"})


async def attaches_an_image(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """A request as the `temporal` CLI sends it, an image in base64 among its input's blocks:
    the worker stores it on first sight (`store_attachments`), then a tool call and the answer
    go on with its reference."""
    fake_api.script(
        "golden-attachment",
        [fake.tool_calls(("list_files", {"path": "."})), fake.text("A chart of sales.")],
    )
    image = base64.b64encode(png_of(2048)).decode()
    blocks = [
        {"type": "text", "text": "What does the chart show?"},
        {
            "type": "image",
            "name": "chart.png",
            "source": {"type": "base64", "media_type": "image/png", "data": image},
        },
    ]
    request = scripted_request("golden-attachment", task={"input": blocks})
    handle = await _start(client, request, queue, workflow_id)
    await handle.result()
    return handle


async def evaluates_a_dataset(
    client: Client, fake_api: FakeAnthropic, queue: str, workflow_id: str
) -> Any:
    """An evaluation run (`EvalRunWorkflow`) of two cases at once, each a child turn whose
    write_file call the run rejects (`--approvals reject`), then scored in `score_eval_case`."""
    fake_api.script(
        "golden-eval",
        [fake.tool_calls(("write_file", {"path": "x.md", "content": "x"})), fake.text("Done.")],
    )
    request = scripted_request("golden-eval", agent={"id": "golden-eval", "tools": ["write_file"]})
    cases = [
        {"name": "writes", "inputs": "Write x.", "expected_output": "Done."},
        {"name": "again", "inputs": "Write y.", "evaluators": [{"Contains": "Done"}]},
    ]
    run = {
        "dataset": "golden",
        "request": {
            "agent": request["agent"],
            "task": {"constraints": {"require_approval": ["write_file"]}},
        },
        "models": [request["agent"]["model"]],
        "concurrency": 2,
        "cases": [
            {
                **case,
                "evaluators": ["EqualsExpected", "ApprovalRequested", *case.get("evaluators", [])],
            }
            for case in cases
        ],
    }
    handle = await client.start_workflow(
        EVAL_RUN_WORKFLOW_TYPE, run, id=workflow_id, task_queue=queue
    )
    await handle.result()
    return handle


async def _until_waiting(handle: WorkflowHandle, call: int = 0) -> None:
    """Until the turn's `wait` call of step `call` (of the script) waits."""
    await until(
        lambda: handle.query(QUERY_STATUS, result_type=TurnStatus),
        lambda status: [w.call_id.endswith(f"_{call}_0") for w in status.waiting_for] == [True],
        f"wait call {call} waiting",
    )


async def _start(
    client: Client, request: dict[str, Any], queue: str, workflow_id: str
) -> WorkflowHandle:
    return await client.start_workflow(
        "AgentTurnWorkflow", request, id=workflow_id, task_queue=queue
    )


SCENARIOS = (
    approval_and_external,
    max_iterations,
    decided_with_an_edit,
    signed_decisions,
    reads_a_large_file,
    session_of_two_turns,
    paused_and_extended,
    compacted,
    falls_back_across_providers,
    internal_error,
    compacted_session_turn,
    session_with_an_extended_turn,
    steered,
    interrupted,
    subagents,
    rejected_then_accepted,
    tenant_paused_and_raised,
    rate_limited,
    loads_a_skill,
    signed_cancel,
    follows_an_mcp_task,
    answered_mcp_questions,
    asks_inside_mcp_tasks,
    calls_a_remote_a2a_agent,
    owned_session,
    previews_a_write,
    guarded_by_guardrails,
    checked_by_policies,
    waits_for_an_event,
    attaches_an_image,
    evaluates_a_dataset,
    runs_code_in_a_sandbox,
)


async def main(version: str, names: list[str], encrypted: bool) -> None:
    keys = [SA_KEYS[kind](name) for name, kind in SEARCH_ATTRIBUTES.items()]
    if encrypted:
        version = f"{version}-encrypted"
    env = await WorkflowEnvironment.start_local(
        data_converter=golden_converter() if encrypted else pydantic_data_converter,
        dev_server_existing_path=temporal_binary("temporal"),
        search_attributes=keys,
    )
    async with env, start_fake_anthropic() as fake_api, start_fake_openai() as openai_api:
        with tempfile.TemporaryDirectory() as tmp:
            settings = make_settings(Path(tmp), f"golden-{uuid.uuid4()}")
            (settings.workspace / "notes.md").write_text("# Notes\n")
            ledger = "".join(f"entry {i:03}: the north light was kept\n" for i in range(60))
            (settings.workspace / "ledger.md").write_text(ledger)
            # The converter keeps large payloads in the golden store (replay reads them back);
            # the activities' conversation nodes stay in the temporary folder.
            validators = OutputValidators([no_digits])
            async with running_worker(
                env.client,
                settings,
                fake_api,
                openai_fake=openai_api,
                output_validators=validators,
            ):
                for scenario in [s for s in SCENARIOS if not names or s.__name__ in names]:
                    # The file's stem is the workflow id, as test_replay.py replays it: signed
                    # decisions are bound to the turn's workflow id.
                    name = f"{scenario.__name__}-{version}"
                    extra = (
                        {"openai_api": openai_api}
                        if "openai_api" in inspect.signature(scenario).parameters
                        else {}
                    )
                    handle = await scenario(
                        env.client, fake_api, settings.task_queue, name, **extra
                    )
                    history = await handle.fetch_history()
                    path = HISTORIES / f"{name}.json"
                    path.write_text(history.to_json())
                    print(f"recorded {path}")


if __name__ == "__main__":
    words = sys.argv[2:]
    asyncio.run(main(sys.argv[1], [w for w in words if w != "--encrypted"], "--encrypted" in words))
