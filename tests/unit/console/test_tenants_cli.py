"""`turnkeeper tenants` on the command line: what is refused before any connection (a name that
is not a name, a negative cap), with exit code 2."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from turnkeeper.client.requests import RunOptions, build_request
from turnkeeper.console.cli import app


@pytest.mark.parametrize(
    "args",
    [
        ["tenants", "set", "bad name", "--usd-per-day", "1"],
        ["tenants", "set", "acme", "--usd-per-day", "-1"],
        ["tenants", "set", "acme", "--usd-per-month", "-0.5"],
        ["tenants", "set", "acme", "--usd-per-day", "lots"],
        ["tenants", "show", "a/b"],
    ],
)
def test_bad_input_exits_2_before_connecting(args: list[str]) -> None:
    # An address nobody listens on: a command that got that far would fail with 1, not 2.
    result = CliRunner().invoke(app, [*args, "--address", "127.0.0.1:1"])
    assert result.exit_code == 2, result.output


def test_a_name_that_is_not_a_name_is_named_in_the_error() -> None:
    result = CliRunner().invoke(app, ["tenants", "show", "a b", "--address", "127.0.0.1:1"])
    assert "'a b' is not a tenant name" in result.output


def test_run_passes_the_tenant_into_the_request() -> None:
    request = build_request(
        RunOptions(input="hi", model="demo:scripted", tenant="acme"), short_id="x"
    )
    assert request.tenant == "acme"
    assert build_request(RunOptions(input="hi", model="demo:scripted"), short_id="x").tenant is None
