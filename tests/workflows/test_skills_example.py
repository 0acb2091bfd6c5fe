"""The skills example (examples/skills) on a real server with the test kit: the model loads the
folder's `refund-policy` skill, reads its `limits.md`, calls the `refund` tool it brings; a
skill defined in code is served beside it by `turn_env(skills=…)`."""

from __future__ import annotations

from pathlib import Path

import pytest

import turnkeeper
from examples.skills.worker import lookup_order, refund
from turnkeeper.client.requests import read_agent_file
from turnkeeper.testing import ScriptedModel, call, reply
from turnkeeper.testing.pytest_plugin import EnvironmentFactory

EXAMPLE = Path(__file__).parents[2] / "examples" / "skills"
TONE = turnkeeper.Skill("tone", "How we write to customers.", "Be brief and kind.")


async def test_the_example_agent_loads_its_skill_reads_a_file_and_refunds(
    turn_env: EnvironmentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TURNKEEPER_SKILLS_DIR", str(EXAMPLE / "skills"))
    # The agent file as `turnkeeper run --agent` reads it, with the scripted model in place of
    # Claude (which has no price, so no cost budget either).
    agent, _constraints = read_agent_file(EXAMPLE / "agent.json")
    agent.pop("model")
    agent["skills"].append({"name": "tone", "always": True})
    model = ScriptedModel(
        [
            call("load_skill", name="refund-policy"),
            call("read_skill_file", name="refund-policy", path="limits.md"),
            call("refund", order_id="1042", amount_usd=25.0),
            lambda conversation: reply(conversation.results[0].text()),
        ]
    )

    async with turn_env(tools=[lookup_order, refund], model=model, skills=[TONE]) as env:
        handle = await env.start_turn("Refund order 1042, it arrived broken", agent=agent)
        pending = await handle.wait_for_approval(timeout=30)
        await handle.approve(pending.call_id, approver="alice")
        report = await handle.result()

    assert report.outcome == "completed", report
    assert report.skills_loaded == ["tone", "refund-policy"]
    results = [block for m in report.messages if m.role == "user" for block in m.content][1:]
    loaded, limits, refunded = (block.text() for block in results[:3])
    assert loaded.startswith("Instructions of the skill 'refund-policy':\n\n# Refund policy")
    assert loaded.endswith("Files of this skill (read_skill_file reads them): limits.md")
    assert "| United Kingdom | 150 |" in limits
    assert refunded == report.output == "Refunded 25.00 USD on order 1042"
