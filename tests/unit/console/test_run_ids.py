"""`turnkeeper run --id` on the command line: an id the runtime keeps, or not of the turn shape,
is refused before any connection with exit code 2 and one line naming why."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from turnkeeper.console.cli import app


@pytest.mark.parametrize(
    ("workflow_id", "says"),
    [
        ("approval-cache-research", "an agent's standing approvals"),
        ("turnkeeper-tenant/acme", "a tenant's spend ledger"),
        ("rate-limit-anthropic:x", "a model's rate-limit ledger"),
        ("turn-lead/writer-1", "sub-agent and session turns"),
        ("two words", "is not a turn id"),
    ],
)
def test_an_id_a_caller_may_not_give_exits_2_before_connecting(workflow_id: str, says: str) -> None:
    # An address nobody listens on: a command that got that far would fail with 1, not 2.
    args = ["run", "hi", "--model", "demo:scripted", "--id", workflow_id, "--no-wait"]
    result = CliRunner().invoke(app, [*args, "--address", "127.0.0.1:1"])
    assert result.exit_code == 2, result.output
    assert "invalid turn request" in result.output and says in " ".join(result.output.split())
