"""turnkeeper from Python, as an application uses it: its own tools in `run_worker`, turns started,
approved and read through `start_turn` and the handle, failures as typed exceptions."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from turnkeeper.contracts.decision_signing import public_key_line

import turnkeeper
from tests.conftest import new_key, wait_for_pending
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic, script_marker
from tests.support.waiting import until

REFUNDS: list[tuple[str, float, str]] = []


@turnkeeper.tool
async def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id."""
    return {"order_id": order_id, "total_usd": 80.0, "status": "delivered"}


@turnkeeper.tool(requires_approval=True, idempotent=False, timeout_s=30)
def refund(order_id: str, amount_usd: float, context: turnkeeper.ToolContext) -> str:
    """Refund part or all of an order."""
    context.heartbeat("refunding")
    REFUNDS.append((order_id, amount_usd, context.idempotency_key))
    return f"refunded ${amount_usd:.2f} on order {order_id}"


async def _pollers(client: Client, queue: str, running: asyncio.Task[None]) -> int:
    """How many pollers the server sees on `queue`; fails at once if the worker already ended."""
    assert not running.done(), running.exception()
    answer = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(namespace=client.namespace, task_queue=TaskQueue(name=queue))
    )
    return len(answer.pollers)


@pytest.fixture
async def worker(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[str]:
    """`turnkeeper.run_worker` with the two tools above and none of the built-in ones, configured
    from the environment as a deployed worker is; yields its task queue."""
    queue = f"tq-{uuid.uuid4()}"
    monkeypatch.setenv("TEMPORAL_ADDRESS", client.service_client.config.target_host)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("TURNKEEPER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "workspace"))
    running = asyncio.create_task(
        turnkeeper.run_worker(tools=[lookup_order, refund], builtin_tools=False, task_queue=queue)
    )
    await until(
        lambda: _pollers(client, queue, running),
        bool,
        "the worker polls its task queue",
    )
    yield queue
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)


def agent(key: str, **overrides: Any) -> dict[str, Any]:
    return {
        "id": "support-agent",
        "model": "anthropic:claude-sonnet-4-6",
        "system_prompt": f"You help customers. {script_marker(key)}",
        "tools": ["lookup_order", "refund"],
        **overrides,
    }


async def test_a_turn_with_the_applications_own_tools_approved_from_code(
    client: Client, fake_anthropic: FakeAnthropic, worker: str
) -> None:
    key = new_key()
    fake_anthropic.script(
        key,
        [
            fake.tool_calls(("lookup_order", {"order_id": "1042"})),
            fake.tool_calls(("refund", {"order_id": "1042", "amount_usd": 25.0})),
            fake.text("Refunded $25."),
        ],
    )
    handle = await turnkeeper.start_turn(
        client,
        agent=agent(key),
        task={"id": "ticket-7", "input": "Refund $25 on order 1042"},
        task_queue=worker,
    )
    kinds = []
    async for event in handle.events():
        kinds.append(event.kind)
        if event.kind == "approval_requested":
            assert event.call_id is not None
            [decided] = await handle.approve(event.call_id, approver="alice", reason="ok")
            assert (decided.tool, decided.approved, decided.approver) == ("refund", True, "alice")
    report = await handle.result()

    assert report.output == "Refunded $25."
    assert kinds[0] == "turn_started" and kinds[-1] == "turn_finished"
    assert [r[:2] for r in REFUNDS if handle.id in r[2]] == [("1042", 25.0)]
    [lookup] = [b for b in report.messages[2].content if b.type == "tool_result"]
    assert '"total_usd":80.0' in lookup.text().replace(" ", "")
    assert (await handle.status()).state == "completed"
    assert [m.role for m in await handle.transcript()] == [m.role for m in report.messages]
    assert turnkeeper.turn(client, handle.id).id == handle.id


async def test_a_failed_turn_raises_the_contracts_error_type_with_its_report(
    client: Client, fake_anthropic: FakeAnthropic, worker: str
) -> None:
    key = new_key()
    fake_anthropic.script(key, [fake.tool_calls(("lookup_order", {"order_id": "1"}))] * 2)
    handle = await turnkeeper.start_turn(
        client,
        {"agent": agent(key, max_iterations=1), "task": {"id": "t", "input": "Look it up"}},
        task_queue=worker,
    )
    with pytest.raises(turnkeeper.MaxIterationsExceeded) as failure:
        await handle.result()
    assert isinstance(failure.value, turnkeeper.TurnError)
    assert failure.value.type == "MaxIterationsExceeded"
    assert failure.value.report is not None and failure.value.report.llm_calls == 1


async def test_refused_decisions_and_bad_requests_raise_at_once(
    client: Client, fake_anthropic: FakeAnthropic, worker: str
) -> None:
    with pytest.raises(turnkeeper.InvalidTurnRequest, match="agent"):
        await turnkeeper.start_turn(client, task={"id": "t", "input": "x"}, task_queue=worker)
    key = new_key()
    fake_anthropic.script(
        key,
        [fake.tool_calls(("refund", {"order_id": "9", "amount_usd": 1.0})), fake.text("-")],
    )
    request = turnkeeper.TurnRequest.model_validate(
        {"agent": agent(key, approvers=["alice"]), "task": {"id": "t", "input": "Refund"}}
    )
    handle = await turnkeeper.start_turn(client, request, task_queue=worker)
    await wait_for_pending(handle.workflow)
    with pytest.raises(turnkeeper.DecisionRefused, match="no such pending call"):
        await handle.approve("toolu_nope", approver="alice")
    with pytest.raises(turnkeeper.DecisionRefused, match="may not decide"):
        await handle.approve(approver="mallory")
    await handle.reject(reason="not today", approver="alice")
    report = await handle.result()
    assert report.decisions[0].approved is False


async def refund_for(
    alice: Ed25519PrivateKey,
    amount_usd: float,
    client: Client,
    fake_anthropic: FakeAnthropic,
    worker: str,
) -> tuple[turnkeeper.TurnHandle, str]:
    """A turn whose approver alice holds `alice`, waiting on a refund of `amount_usd`; its handle
    and the call's id."""
    key = new_key()
    refund_call = ("refund", {"order_id": "7", "amount_usd": amount_usd})
    fake_anthropic.script(key, [fake.tool_calls(refund_call), fake.text("Done.")])
    approvers = [{"name": "alice", "public_key": public_key_line(alice)}]
    handle = await turnkeeper.start_turn(
        client,
        agent=agent(key, approvers=approvers),
        task={"id": "t", "input": "Refund"},
        task_queue=worker,
    )
    status = await wait_for_pending(handle.workflow)
    return handle, status.pending[0].call_id


async def test_a_signed_approval_from_code(
    client: Client, fake_anthropic: FakeAnthropic, worker: str
) -> None:
    alice = Ed25519PrivateKey.generate()
    handle, call_id = await refund_for(alice, 2.0, client, fake_anthropic, worker)
    with pytest.raises(turnkeeper.DecisionRefused, match="not signed"):
        await handle.approve(approver="alice")
    [decided] = await handle.approve(call_id, approver="alice", key=alice)
    assert decided.signed
    assert (await handle.result()).output == "Done."


async def test_a_call_no_signature_can_cover_is_refused_before_anything_is_sent(
    client: Client, fake_anthropic: FakeAnthropic, worker: str
) -> None:
    alice = Ed25519PrivateKey.generate()
    beyond_jcs = 2**60  # an integer canonical JSON (RFC 8785) cannot express
    handle, call_id = await refund_for(alice, beyond_jcs, client, fake_anthropic, worker)

    with pytest.raises(turnkeeper.DecisionRefused, match="not canonical JSON") as refused:
        await handle.approve(call_id, approver="alice", key=alice)
    after = await handle.status()
    await handle.cancel()

    assert f"cannot sign a decision on {call_id!r}" in str(refused.value)
    assert [call.call_id for call in after.pending] == [call_id] and not after.refused_decisions


# A script of the application's: connects, and says what it likes on its own stdout.
CONNECTING_SCRIPT = """
import asyncio, logging, sys
import turnkeeper
if sys.argv[2] == "debug":
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
asyncio.run(turnkeeper.connect(address=sys.argv[1]))
print("the application's own line")
turnkeeper.exit_without_teardown(0)
"""


@pytest.mark.parametrize("logging_config", ["none", "debug"])
async def test_connect_writes_nothing_on_the_applications_stdout(
    client: Client, logging_config: str
) -> None:
    """Our lines go to the `logging` module, whose configuration the application owns: at its
    defaults nothing below a warning shows; at DEBUG the line shows, on the handler's stream."""
    address = client.service_client.config.target_host
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_")}
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", CONNECTING_SCRIPT, address, logging_config],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the application's own line\n"
    assert ("temporal connected" in done.stderr) == (logging_config == "debug")
