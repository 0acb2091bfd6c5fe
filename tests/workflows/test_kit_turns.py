"""The test kit (`turnkeeper.testing`) as an application's tests use it, against real servers: a
scripted turn through an approval on the session's dev server (the `turn_env` fixture), a script
that does not fit the turn failing the test with its own message, an approval timeout of an hour
that the time-skipping server runs in a moment, and a handle used after its environment
closed failing at once with `EnvironmentStopped` (but for the report of a turn that ended while
the session's server is up). (The script's checks without a server:
tests/unit/testing/test_scripted_model.py.)"""

from __future__ import annotations

import base64
import time
from pathlib import Path

import pytest
from turnkeeper.contracts.attachments import Base64Source, DocumentBlock, ImageBlock

import turnkeeper
from tests.support.attachment_files import pdf_of, png_of
from turnkeeper.testing import (
    Conversation,
    EnvironmentStopped,
    Reply,
    ScriptedModel,
    ScriptError,
    TurnTestEnvironment,
    assert_decisions,
    assert_outcome,
    assert_tools_called,
    call,
    reply,
)
from turnkeeper.testing.pytest_plugin import EnvironmentFactory

REFUNDED: list[str] = []


@turnkeeper.tool
async def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: delivered, 25.00 USD"


@turnkeeper.tool(requires_approval=True, idempotent=False)
async def refund(order_id: str, amount_usd: float) -> str:
    """Refund an order."""
    REFUNDED.append(order_id)
    return f"refunded {amount_usd:.2f} USD on order {order_id}"


async def test_a_scripted_turn_runs_the_tools_through_an_approval(
    turn_env: EnvironmentFactory,
) -> None:
    model = ScriptedModel(
        [
            call("lookup_order", order_id="1042"),
            [call("refund", order_id="1042", amount_usd=25.0), call("lookup_order", order_id="7")],
            lambda conversation: reply(conversation.results[0].text()),
        ]
    )
    async with turn_env(tools=[lookup_order, refund], model=model) as env:
        handle = await env.start_turn("Refund order 1042", task={"id": "ticket-1"})
        pending = await handle.wait_for_approval(timeout=20)
        assert (pending.tool, pending.input) == ("refund", {"order_id": "1042", "amount_usd": 25.0})
        await handle.approve(pending.call_id, approver="alice")
        report = await handle.result()

        assert_outcome(report, "completed", "refunded 25.00 USD on order 1042")
        assert_tools_called(
            report,
            [
                call("lookup_order", order_id="1042"),
                call("refund", order_id="1042", amount_usd=25.0),
                "lookup_order",
            ],
        )
        assert_decisions(await handle.decisions(), [("refund", True)])
        assert report.task_id == "ticket-1" and model.calls == 3


async def test_a_script_that_does_not_fit_the_turn_fails_the_test_with_its_message(
    turn_env: EnvironmentFactory,
) -> None:
    async with turn_env(tools=[lookup_order]) as env:
        unknown = await env.start_turn("x", model=ScriptedModel([call("refund", order_id="1")]))
        with pytest.raises(ScriptError, match="step 0 calls 'refund', which the agent does not"):
            await unknown.result()

        short = await env.start_turn("x", model=ScriptedModel([call("lookup_order", order_id="1")]))
        with pytest.raises(ScriptError, match="asked for model call 2, but the script has 1"):
            await short.wait_for_approval(timeout=20)


async def test_a_scripted_model_sees_the_files_a_test_attaches_as_a_provider_would(
    turn_env: EnvironmentFactory, tmp_path: Path
) -> None:
    chart, invoice = png_of(8 * 1024), pdf_of()
    (tmp_path / "chart.png").write_bytes(chart)
    seen: list[list[tuple[str, bytes]]] = []

    def look(conversation: Conversation) -> Reply:
        opening = conversation.messages[0].content
        seen.append(
            [
                (block.source.media_type, base64.b64decode(block.source.data))
                for block in opening
                if isinstance(block, ImageBlock | DocumentBlock)
                and isinstance(block.source, Base64Source)
            ]
        )
        return reply(f"{len(seen[-1])} files")

    async with turn_env(model=ScriptedModel([look, look])) as env:
        # As `start_turn` takes them: files after the text, or the input as content blocks.
        # One after the other, so that `seen` is in the order of the turns.
        by_path = await env.start_turn("What is it?", attachments=[tmp_path / "chart.png"])
        assert_outcome(await by_path.result(), "completed", "1 files")
        as_blocks = await env.start_turn(
            [
                {"type": "text", "text": "And this?"},
                {
                    "type": "document",
                    "source": {
                        "type": "base64",
                        "media_type": "application/pdf",
                        "data": base64.b64encode(invoice).decode(),
                    },
                },
            ]
        )
        assert_outcome(await as_blocks.result(), "completed", "1 files")

    assert seen == [[("image/png", chart)], [("application/pdf", invoice)]]


async def test_an_hour_long_approval_timeout_passes_in_a_moment_on_the_time_skipping_server() -> (
    None
):
    model = ScriptedModel(
        [call("refund", order_id="2001", amount_usd=5.0), reply("The refund was not approved.")]
    )
    started = time.monotonic()
    async with TurnTestEnvironment(tools=[refund], model=model, time_skipping=True) as env:
        handle = await env.start_turn("Refund", task={"constraints": {"approval_timeout_s": 3600}})
        report = await handle.result()
        decisions = await handle.decisions()

    assert_outcome(report, "completed", "The refund was not approved.")
    assert "2001" not in REFUNDED
    assert_decisions(decisions, [("refund", False)])
    assert decisions[0].reason == "approval timed out"
    assert time.monotonic() - started < 30


async def test_a_handle_used_after_the_environment_closed_says_at_once_its_worker_has_stopped(
    turn_env: EnvironmentFactory,
) -> None:
    model = ScriptedModel([call("lookup_order", order_id="7"), reply("Order 7 was delivered.")])
    async with turn_env(tools=[lookup_order], model=model) as env:
        # Running from the first line of the block, before the worker has polled once.
        assert env.worker_running
        handle = await env.start_turn("Where is order 7?")
        report = await handle.result()
    assert not env.worker_running and env.server_running

    started = time.monotonic()
    with pytest.raises(EnvironmentStopped) as stopped:
        await handle.status()
    # Without the check, Temporal answers the query after 30 s with "no poller seen".
    assert time.monotonic() - started < 0.5
    message = str(stopped.value)
    assert f"turn {handle.id}: the environment's worker has stopped" in message
    assert "call status(), transcript(), decisions(), events(), wait_for_approval()" in message
    for needs_the_worker in (
        handle.transcript,
        handle.decisions,
        handle.wait_for_approval,
        lambda: handle.approve(approver="alice"),
        lambda: handle.submit("call-1", "late"),
        handle.cancel,
    ):
        with pytest.raises(EnvironmentStopped, match="the environment's worker has stopped"):
            await needs_the_worker()
    with pytest.raises(EnvironmentStopped):
        handle.events()
    # The session's server is still up, and a report is read from the turn's history.
    assert await handle.result() == report
    assert_outcome(report, "completed", "Order 7 was delivered.")


async def test_waiting_after_the_environment_closed_for_a_turn_it_left_running_fails_at_once(
    turn_env: EnvironmentFactory,
) -> None:
    model = ScriptedModel([call("refund", order_id="3001", amount_usd=5.0), reply("Refunded.")])
    async with turn_env(tools=[refund], model=model) as env:
        handle = await env.start_turn("Refund order 3001")
        await handle.wait_for_approval(timeout=20)

    started = time.monotonic()
    with pytest.raises(EnvironmentStopped, match="was still running when the environment's wor"):
        await handle.result()
    assert time.monotonic() - started < 1
    assert "3001" not in REFUNDED


async def test_an_environment_that_started_its_server_leaves_its_handles_nothing_to_ask() -> None:
    model = ScriptedModel([reply("Hello.")])
    async with TurnTestEnvironment(model=model) as env:
        handle = await env.start_turn("Say hello")
        await handle.result()

    started = time.monotonic()
    with pytest.raises(EnvironmentStopped, match="and so has the server it started"):
        await handle.result()
    with pytest.raises(EnvironmentStopped, match="and so has the server it started"):
        await handle.status()
    # Without the check, the client retries the stopped server's port for seconds.
    assert time.monotonic() - started < 0.5
