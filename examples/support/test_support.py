"""The support agent's own tests, on the test kit: no model key, no network, a real Temporal
server and worker. Run them as CI does: `pytest examples/support` (needs `turnkeeper[testing]`).

The model is scripted, so these test what the team wrote (the tools, the agent's request, the
approval of refunds), not what a model would say; docs/testing-your-agent.md walks through them.
"""

from __future__ import annotations

import pytest
from tools import AGENT, lookup_order, refund

from turnkeeper.testing import (
    ScriptedModel,
    ScriptError,
    assert_decisions,
    assert_outcome,
    assert_tools_called,
    call,
    reply,
)

# The agent as client.py starts it, with the scripted model in place of a real one.
SUPPORT_AGENT = {key: value for key, value in AGENT.items() if key != "model"}


async def test_a_refund_waits_for_approval_and_is_made_once_approved(turn_env) -> None:
    model = ScriptedModel(
        [
            call("lookup_order", order_id="1042"),
            call("refund", order_id="1042", amount_usd=25.0),
            lambda conversation: reply(f"Done: {conversation.results[0].text()}."),
        ]
    )
    async with turn_env(tools=[lookup_order, refund], model=model) as env:
        handle = await env.start_turn("Refund order 1042, it arrived broken", agent=SUPPORT_AGENT)

        pending = await handle.wait_for_approval(timeout=30)
        assert pending.tool == "refund" and pending.input["amount_usd"] == 25.0
        await handle.approve(pending.call_id, approver="alice")
        report = await handle.result()

        assert_tools_called(
            report,
            [
                call("lookup_order", order_id="1042"),
                call("refund", order_id="1042", amount_usd=25.0),
            ],
        )
        assert_decisions(await handle.decisions(), [("refund", True)])
        assert_outcome(report, "completed")
        assert report.output.startswith("Done: Refunded 25.00 USD on order 1042")


async def test_a_refund_above_the_total_comes_back_to_the_model_as_an_error(turn_env) -> None:
    def explain(conversation):
        [result] = conversation.results
        assert result.is_error and "at most its total, 40.00 USD" in result.text()
        return reply("I can refund at most 40.00 USD.")

    model = ScriptedModel([call("refund", order_id="1043", amount_usd=99.0), explain])
    async with turn_env(tools=[lookup_order, refund], model=model) as env:
        handle = await env.start_turn("Refund 99 USD on order 1043", agent=SUPPORT_AGENT)
        await handle.approve((await handle.wait_for_approval()).call_id, approver="bob")
        assert_outcome(await handle.result(), "completed", "I can refund at most 40.00 USD.")


async def test_the_agent_offers_only_its_own_tools(turn_env) -> None:
    model = ScriptedModel([call("write_file", path="orders.csv", content="")])
    async with turn_env(tools=[lookup_order, refund], model=model) as env:
        handle = await env.start_turn("Export the orders", agent=SUPPORT_AGENT)
        with pytest.raises(ScriptError, match="'write_file', which the agent does not offer"):
            await handle.result()
