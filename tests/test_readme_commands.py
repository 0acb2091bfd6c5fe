"""Every `temporal` command the README and the documentation pages show is valid as written,
checked against the `--help` of the bundled Temporal CLI (the subcommand and every flag), with
each `--input` validated as the payload it is sent to; and the entry points the README runs
answer. Every other documented command is checked in-process by the fast tier
(tests/unit/test_readme_commands.py); tests/support/documented_commands.py reads them out of the
documents.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel, TypeAdapter
from temporalio import workflow
from turnkeeper.contracts import names
from turnkeeper.contracts.approvals import (
    SIGNAL_REMEMBER,
    SIGNAL_REVOKE,
    RememberInput,
    RevokeInput,
)
from turnkeeper.contracts.budget_extension import ExtendBudgetInput
from turnkeeper.contracts.evals import QUERY_EVAL_PROGRESS
from turnkeeper.contracts.request_checks import request_problem
from turnkeeper.contracts.session import CloseInput, SendInput, SessionRequest
from turnkeeper.contracts.signals import ApproveInput, SubmitToolResultInput
from turnkeeper.contracts.steering import InterruptInput, SteerInput
from turnkeeper.contracts.turn import TurnRequest

from tests.conftest import temporal_binary
from tests.support.documented_commands import (
    ROOT,
    Command,
    check_repository_paths,
    documented_commands,
    flag_names,
    option_names,
    program_of,
    without_assignments,
)
from turnkeeper.worker.wiring import worker_workflows

# What a signal or update named `--name` takes, and what each workflow type starts from.
PAYLOADS: dict[str, type[BaseModel]] = {
    names.SIGNAL_APPROVE: ApproveInput,
    names.UPDATE_DECIDE: ApproveInput,
    names.UPDATE_EXTEND_BUDGET: ExtendBudgetInput,
    names.SIGNAL_SUBMIT_TOOL_RESULT: SubmitToolResultInput,
    names.UPDATE_SEND: SendInput,
    names.UPDATE_CLOSE: CloseInput,
    SIGNAL_REMEMBER: RememberInput,
    SIGNAL_REVOKE: RevokeInput,
    names.UPDATE_STEER: SteerInput,
    names.UPDATE_INTERRUPT: InterruptInput,
}
# What a query named `--name` takes beside the models above (its argument, strictly).
QUERY_ARGUMENTS: dict[str, type] = {QUERY_EVAL_PROGRESS: int}
STARTS: dict[str, type[BaseModel]] = {
    names.WORKFLOW_TYPE: TurnRequest,
    names.SESSION_WORKFLOW_TYPE: SessionRequest,
}

# ---- temporal --------------------------------------------------------------------------------


def _temporal_help(path: str) -> str:
    return _temporal(*path.split(), "--help")


@functools.cache
def _temporal(*arguments: str) -> str:
    return subprocess.run(
        [temporal_binary("temporal"), *arguments],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout


def _option_values(words: tuple[str, ...]) -> dict[str, str]:
    values = {}
    for index, word in enumerate(words):
        if word.startswith("--") and index + 1 < len(words):
            values[word] = words[index + 1]
    return values


def _check_temporal(command: Command, words: tuple[str, ...]) -> None:
    path_words = []
    for word in words[1:]:
        if not re.fullmatch(r"[a-z][a-z-]*", word):
            break
        path_words.append(word)
    path = " ".join(path_words)
    help_text = _temporal_help(path)
    assert re.search(rf"(?m)^  temporal {re.escape(path)} \[flags\]$", help_text), (
        f"`temporal {path}` is not a command of the bundled Temporal CLI"
    )
    flags = flag_names(help_text) | flag_names(_temporal("options"))  # and the global options
    assert option_names(words) <= flags, f"no such flag: {option_names(words) - flags}"
    if command.complete:
        _check_temporal_values(path, _option_values(words))


def _handler_names() -> set[str]:
    found = set()
    # Every workflow a worker runs: the turn, the session and the long-lived ledgers.
    for workflow_class in worker_workflows():
        definition = workflow._Definition.from_class(workflow_class)
        assert definition is not None
        found |= {*definition.signals, *definition.updates, *definition.queries}
    return found


def _check_temporal_values(path: str, values: dict[str, str]) -> None:
    if path == "operator search-attribute create":
        assert names.SEARCH_ATTRIBUTES.get(values["--name"]) == values["--type"]
    if path == "workflow start":
        assert values["--type"] in STARTS, f"{values['--type']} is not a workflow of turnkeeper"
        model = STARTS[values["--type"]]
        payload = model.model_validate(json.loads(values["--input"]))
        if isinstance(payload, TurnRequest):
            assert request_problem(payload) is None
        if isinstance(payload, SessionRequest):
            assert payload.session_id == values["--workflow-id"]
    if "--name" in values and path.startswith(
        ("workflow signal", "workflow query", "workflow update")
    ):
        assert values["--name"] in _handler_names(), f"no workflow handles {values['--name']!r}"
        if "--input" in values and not _placeholder(values["--input"]):
            given, name = json.loads(values["--input"]), values["--name"]
            if name in QUERY_ARGUMENTS:
                TypeAdapter(QUERY_ARGUMENTS[name]).validate_python(given, strict=True)
            else:
                PAYLOADS[name].model_validate(given)


def _placeholder(value: str) -> bool:
    return bool(re.fullmatch(r"<[^>]*>", value))


TEMPORAL_COMMANDS = [
    command
    for command in documented_commands()
    if program_of(without_assignments(command.words)) == "temporal"
]


@pytest.mark.parametrize("command", TEMPORAL_COMMANDS, ids=str)
def test_a_documented_command_is_valid_as_written(command: Command) -> None:
    words = without_assignments(command.words)
    _check_temporal(command, words)
    check_repository_paths(words)


def test_the_entry_points_the_readme_runs_answer() -> None:
    # As installed and run from a checkout: the console script and the worker script.
    console = Path(sys.executable).with_name("turnkeeper")
    for argv in ([str(console), "--help"], [sys.executable, "worker.py", "--help"]):
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
