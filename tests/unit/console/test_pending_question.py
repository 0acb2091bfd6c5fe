"""`turnkeeper pending` and `status` on an MCP server's question: what it asks, and the commands
that cancel it or answer it through `decide` (ours has no answer option); `turnkeeper reject`
names it by its call id."""

from __future__ import annotations

import io
import json
import shlex
from datetime import UTC, datetime

import pytest
from rich.console import Console
from turnkeeper.contracts.signals import PendingCall, TurnStatus

from turnkeeper.client.errors import TurnUnavailable
from turnkeeper.client.turns import waiting_calls
from turnkeeper.console import render
from turnkeeper.console.target import Target

TARGET = Target(address=None, namespace=None, ui_url="http://localhost:8233")
QUESTION = PendingCall(
    call_id="toolu_1",
    tool="mcp__shop__order",
    input={"item": "tea"},
    kind="elicitation",
    since=datetime(2026, 1, 1, tzinfo=UTC),
    message="Where should the order go?",
    requested_schema={"type": "object", "properties": {"address": {"type": "string"}}},
)


def test_the_question_is_shown_with_the_commands_that_answer_it() -> None:
    out = io.StringIO()
    render.pending(Console(file=out, width=400), "turn-1", [QUESTION], TARGET)
    text = out.getvalue()

    assert "mcp__shop__order waits for an answer to its server's question" in text
    assert "asks: Where should the order go?" in text
    assert "turnkeeper reject turn-1 toolu_1 --reason cancel" in text
    update = next(line for line in text.splitlines() if "update execute" in line)
    words = shlex.split(update.strip())
    payload = json.loads(words[words.index("--input") + 1])
    assert words[words.index("--name") + 1] == "decide"
    assert payload["call_id"] == "toolu_1" and payload["input"] == {"address": "…"}
    assert "submit_tool_result" not in text


def test_a_decision_names_the_question_by_its_call_id_but_all_leaves_it_alone() -> None:
    status = TurnStatus(state="awaiting_approval", pending=[QUESTION])

    assert waiting_calls(status, "approval", "toolu_1") == [QUESTION]
    with pytest.raises(TurnUnavailable, match="Nothing in this turn waits for approval"):
        waiting_calls(status, "approval", "all")
