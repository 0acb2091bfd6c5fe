"""Guardrails as an application runs them (docs/guardrails.md): a worker script that declares
a `@turnkeeper.guardrail` and calls `turnkeeper.run_worker(tools=[…], guardrails=[…])`, run as
its own process with `TURNKEEPER_GUARDRAIL_MAX_CHARS` in its environment, and a turn that names
the application's guardrail, the built-in `secrets` and a log-only `size_cap`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.conftest import SystemStack
from tests.system.steps import connect_as_user, model_saw, tool_results

SHOP_API_KEY = "shop-live-" + "5" * 20  # the worker's own credential, which the tool leaks

SUPPORT_WORKER = '''
import asyncio
import os
import re

import turnkeeper

CARD = re.compile(r"\\b(?:\\d[ -]?){12}(\\d{4})\\b")


@turnkeeper.guardrail
def no_card_numbers(text: str) -> turnkeeper.Redact | None:
    """Keeps card numbers from the model and the caller: the last four digits stay."""
    if CARD.search(text):
        return turnkeeper.Redact(CARD.sub(r"card ending \\1", text), "a card number")
    return None


@turnkeeper.tool
async def lookup_customer(email: str) -> dict:
    """Look up a customer by email."""
    return {
        "email": email,
        "card": "4111 1111 1111 1234",
        "debug": "api key " + os.environ["SHOP_API_KEY"],
    }


asyncio.run(turnkeeper.run_worker(tools=[lookup_customer], guardrails=[no_card_numbers]))
'''


async def test_an_application_worker_runs_its_guardrails(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "support_worker.py"
    script.write_text(SUPPORT_WORKER)
    env = {"SHOP_API_KEY": SHOP_API_KEY, "TURNKEEPER_GUARDRAIL_MAX_CHARS": "60"}
    worker = await stack.start_worker(script=[sys.executable, str(script)], env=env)
    key = new_key()
    stack.fake.script(
        key,
        [
            fake.tool_calls(("lookup_customer", {"email": "ann@example.com"})),
            fake.text("Ann pays with 4111 1111 1111 1234."),
        ],
    )

    client = await connect_as_user(worker, monkeypatch)
    handle = await turnkeeper.start_turn(
        client,
        agent={
            "id": "support",
            "model": "anthropic:claude-sonnet-4-6",
            "system_prompt": f"You help customers. [script:{key}]",
            "tools": ["lookup_customer"],
            "guardrails": [
                "no_card_numbers",
                "secrets",
                {"name": "size_cap", "mode": "log_only"},
            ],
        },
        task={"id": f"ticket-{key}", "input": "How does ann@example.com pay?"},
    )
    report = await handle.result()

    assert report.output == "Ann pays with card ending 1234."
    [looked_up] = tool_results(model_saw(stack, key)[2])
    seen = json.dumps(looked_up)
    assert "card ending 1234" in seen and "4111" not in seen
    assert SHOP_API_KEY not in seen and "[redacted]" in seen
    applied = [
        (d.stage, d.guardrail, d.verdict, d.enforced)
        for d in report.guardrail_decisions
        if d.verdict != "pass"
    ]
    assert applied == [
        ("tool_result", "no_card_numbers", "redact", True),
        ("tool_result", "secrets", "redact", True),
        ("tool_result", "size_cap", "block", False),  # over 60 characters, logged only
        ("answer", "no_card_numbers", "redact", True),
    ]
    # The turn record, as the worker process writes it: every verdict, never the text.
    logged = worker.events("guardrail_decision")
    assert [(line["stage"], line["guardrail"], line["verdict"]) for line in logged] == [
        (d.stage, d.guardrail, d.verdict) for d in report.guardrail_decisions
    ]
    assert "4111 1111" not in json.dumps(logged)
    assert worker.stop() == 0
