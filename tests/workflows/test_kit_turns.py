"""The test kit (`turnkeeper.testing`) as an application's tests use it, against real servers: a
scripted turn through an approval on the session's dev server (the `turn_env` fixture), a script
that does not fit the turn failing the test with its own message, and an approval timeout of an
hour that the time-skipping server runs in a moment. (The script's checks without a server:
tests/unit/testing/test_scripted_model.py.)"""

from __future__ import annotations

import time

import pytest

import turnkeeper
from turnkeeper.testing import (
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
