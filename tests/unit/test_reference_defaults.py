"""The defaults and thresholds docs/reference.md states are the code's: each command option's
`(default …)` against the command's own parser, the worker flags' defaults against `worker.py`'s
parser, each variable's default against the settings the worker reads with it unset, and the
content store's thresholds against the converter's constants. (Signatures:
tests/unit/test_reference_drift.py; the names in both directions: tests/unit/test_reference.py.)
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import typer.main

import turnkeeper
from tests.unit.test_reference import _command_path, _tables
from turnkeeper.console import worker_cli
from turnkeeper.console.cli import app
from turnkeeper.payloads.payload_storage import CLAIM_CHECK_BYTES, LARGE_PAYLOAD_BYTES
from turnkeeper.worker.settings import Settings, SettingsError

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference.md"
VARIABLE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
# `--opt …` (`VARIABLE`, default `value`) or `--opt` (default `value`), in a command's row.
OPTION_DEFAULT = re.compile(r"`(--[a-z][a-z0-9-]*)[^`]*` \((?:`([A-Z_0-9]+)`, )?default `([^`]+)`")


def _command(path: str) -> Any:
    command = typer.main.get_command(app)
    for word in path.split():
        command = command.commands[word]  # type: ignore[attr-defined]
    return command


def _option(path: str, option: str) -> Any:
    return next(p for p in _command(path).params if option in p.opts)


def _documented_option_defaults() -> list[tuple[str, str, str | None, str]]:
    """(command path, option, variable or None, documented default) of every command row; not
    an option whose default the command works out when it runs (`--id`'s `ID-fork-N`)."""
    found = []
    for row in _tables("names")["commands"]:
        path = _command_path(row[0])
        for option, variable, default in OPTION_DEFAULT.findall(row[1]):
            if _option(path, option).default is not None:
                found.append((path, option, variable or None, default))
    return found


@pytest.mark.parametrize(
    ("path", "option", "variable", "default"), _documented_option_defaults(), ids=str
)
def test_a_commands_documented_default_is_its_parsers(
    path: str, option: str, variable: str | None, default: str
) -> None:
    parameter = _option(path, option)
    assert _same(parameter.default, default)
    if variable:
        assert parameter.envvar == variable


def _same(value: object, documented: str) -> bool:
    """`30` documents 30.0 too."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(documented) == value
    return str(value) == documented


def test_the_commands_state_defaults() -> None:
    # The regular expression above still reads the table: a reworded table fails here.
    assert len(_documented_option_defaults()) >= 8


def test_the_worker_flags_literal_defaults_are_its_parsers() -> None:
    parsed = vars(worker_cli.parse_args([]))
    checked = []
    for flag, default, _ in _tables("names")["worker-flags"]:
        literal = re.fullmatch(r"`([^`]+)`", default)
        if literal and not VARIABLE.fullmatch(literal.group(1)):
            name = flag.strip("`").removeprefix("--").replace("-", "_")
            assert _same(parsed[name], literal.group(1)), flag
            checked.append(flag)
    assert len(checked) >= 2


# A variable that means something only beside another: the cassette's mode needs a cassette.
COMPANIONS = {"TURNKEEPER_CASSETTE_MODE": {"TURNKEEPER_CASSETTE": "calls.cassette"}}


def _settings(environment: dict[str, str]) -> Settings | None:
    try:
        return Settings.from_env(environment)
    except SettingsError:
        return None


def _variable_defaults() -> list[tuple[str, str]]:
    """(variable, documented default) for each variable the table gives a literal default;
    a row of several variables pairs them with as many comma-separated defaults."""
    pairs = []
    for row in _tables("names")["environment"]:
        variables = re.findall(r"`([A-Z_0-9]+)`", row[0])
        defaults = re.findall(r"`([^`]+)`", row[1])
        plain = re.fullmatch(r"(?:`[^`]+`(?:, )?)+", row[1])
        # `<data dir>/store` names another setting rather than a value.
        if plain and len(defaults) == len(variables) and "<" not in row[1]:
            pairs += zip(variables, defaults, strict=True)
    return pairs


def test_every_variable_the_worker_settings_read_has_its_documented_default() -> None:
    """Set to its documented default, a variable changes none of the settings; set to another
    value, it changes them (or is refused), which shows the settings read it at all."""
    checked = []
    for variable, default in _variable_defaults():
        beside = COMPANIONS.get(variable, {})
        unset = dataclasses.asdict(Settings.from_env(beside))
        other = str(int(default) + 1) if default.isdigit() else default + "-other"
        changed = _settings({**beside, variable: other})
        if changed is not None and dataclasses.asdict(changed) == unset:
            continue  # not a worker setting (the console's, the telemetry's)
        documented = Settings.from_env({**beside, variable: default})
        assert dataclasses.asdict(documented) == unset, variable
        checked.append(variable)
    assert {"AGENT_TASK_QUEUE", "AGENT_WORKSPACE", "TURNKEEPER_DATA_DIR"} <= set(checked)
    assert len(checked) >= 8, checked


def test_the_content_stores_thresholds_are_the_converters() -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    converter = next(line for line in text.splitlines() if line.startswith("| data converter |"))
    thresholds = {f"{CLAIM_CHECK_BYTES // 1024} KiB", f"{LARGE_PAYLOAD_BYTES // 1024} KiB"}
    assert set(re.findall(r"\d+ KiB", converter)) == thresholds


def test_the_tool_decorators_documented_defaults_are_a_tools() -> None:
    """`requires_approval=` (default false), `timeout_s=` (60; …): what a bare `@tool` makes."""

    @turnkeeper.tool
    def probe() -> str:
        """A tool with every default."""
        return ""

    row = next(row for row in _tables("names")["library"] if row[0] == "`tool`")
    documented = re.findall(r"`(\w+)=` \((?:default )?([\w.]+)", row[1])
    assert len(documented) >= 5
    for option, value in documented:
        actual = getattr(probe, option)
        if isinstance(actual, bool):
            assert actual == (value == "true"), option
        else:
            assert actual == float(value), option
