"""Every command the README and the documentation pages show is valid as written.

Running them would need a model key, a server and minutes, so each is checked the way its
program would read it, without its side effects: a `turnkeeper` command is parsed by the typer
app itself (the command, its arguments and its options, with their types), `python worker.py`
by the worker's own argument parser, a `temporal` command against the `--help` of the bundled
Temporal CLI (the subcommand and every flag), with each `--input` validated as the payload it is
sent to; files named must exist and exported variables must be documented. Inline commands
(`turnkeeper approve ID CALL_ID [--reason R]`) are syntax summaries: only their subcommand and
their option names are checked.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import json
import re
import shlex
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main
from pydantic import BaseModel
from temporalio import workflow
from turnkeeper.activities.providers.endpoints import named_endpoints
from turnkeeper.contracts import names
from turnkeeper.contracts.approvals import (
    SIGNAL_REMEMBER,
    SIGNAL_REVOKE,
    RememberInput,
    RevokeInput,
)
from turnkeeper.contracts.budget_extension import ExtendBudgetInput
from turnkeeper.contracts.session import CloseInput, SendInput, SessionRequest
from turnkeeper.contracts.signals import ApproveInput, SubmitToolResultInput
from turnkeeper.contracts.turn import TurnRequest
from turnkeeper.workflows.agent_session_workflow import AgentSessionWorkflow
from turnkeeper.workflows.agent_turn_workflow import AgentTurnWorkflow
from turnkeeper.workflows.approval_cache_workflow import ApprovalCacheWorkflow
from turnkeeper.workflows.request_checks import request_problem

from tests.conftest import temporal_binary
from turnkeeper.client.requests import RunOptions, build_request
from turnkeeper.console import worker_cli
from turnkeeper.console.cli import app

ROOT = Path(__file__).resolve().parents[1]
# The README and every page of the documentation site (docs/, built by mkdocs.yml).
DOCUMENTS = ("README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")))
SHELL_BLOCKS = {"bash", "sh", "shell", "console"}
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
}
STARTS: dict[str, type[BaseModel]] = {
    names.WORKFLOW_TYPE: TurnRequest,
    names.SESSION_WORKFLOW_TYPE: SessionRequest,
}
# A word naming a file of the repository, which must exist.
REPO_PATH = re.compile(r"^(?:agents|bench|deploy|docs|examples|tests)/\S*$|^[\w./-]+\.(?:json|py)$")


@dataclass(frozen=True)
class Command:
    where: str
    words: tuple[str, ...]
    complete: bool  # False: an inline syntax summary, with placeholders and [optional] parts

    def __str__(self) -> str:
        return f"{self.where}: {shlex.join(self.words)}"


def _fenced_blocks(text: str) -> Iterator[tuple[int, str, str]]:
    """(line number of the opening fence, info string, dedented body) of each fenced block."""
    opening: tuple[int, str, list[str]] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        fence = re.fullmatch(r"\s*```(\S*)\s*", line)
        if fence and opening is None:
            opening = (number, fence.group(1), [])
        elif fence and opening is not None:
            yield opening[0], opening[1], textwrap.dedent("\n".join(opening[2]))
            opening = None
        elif opening is not None:
            opening[2].append(line)


def _shell_lines(body: str) -> Iterator[tuple[int, str]]:
    """Logical command lines: continued after a trailing backslash or an unclosed quote."""
    pending, first = "", 0
    for offset, line in enumerate(body.splitlines()):
        if not pending:
            first = offset
        pending += line + "\n"
        if line.endswith("\\"):
            continue
        try:
            shlex.split(pending, comments=True)
        except ValueError:  # a quote that closes on a later line
            continue
        yield first, pending.replace("\\\n", " ")
        pending = ""


def _simple_commands(line: str) -> Iterator[tuple[str, ...]]:
    words: list[str] = []
    for word in shlex.split(line, comments=True):
        if word in {"&&", "||", ";", "|", "&"}:
            yield tuple(words)
            words = []
        else:
            words.append(word)
    if words:
        yield tuple(words)


def _block_commands(document: str, text: str) -> Iterator[Command]:
    for start, info, body in _fenced_blocks(text):
        for offset, line in _shell_lines(body):
            shown = line.strip()
            if info not in SHELL_BLOCKS:
                # Output shown with its prompt, or a command the output tells the reader to run.
                if shown.startswith("$ "):
                    shown = shown[2:]
                elif not shown.startswith(("turnkeeper ", "temporal ")):
                    continue
            for words in _simple_commands(shown):
                yield Command(f"{document}:{start + 1 + offset}", words, complete=True)


def _inline_commands(document: str, text: str) -> Iterator[Command]:
    # Blocks blanked line for line, so that a span's offset still gives its line.
    prose = re.sub(r"(?ms)^\s*```.*?^\s*```", lambda block: "\n" * block[0].count("\n"), text)
    for span in re.finditer(r"`([^`]+)`", prose):
        words = _words(span.group(1).replace("\\|", "|"))
        program = _program(_without_assignments(words))
        if program in {"turnkeeper", "temporal", "worker.py", "pip"} and len(words) > 1:
            line = prose[: span.start()].count("\n") + 1
            yield Command(f"{document}:{line}", words, complete=False)


def _words(span: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(span))
    except ValueError:  # a summary such as `--reason "…` is not shell syntax
        return tuple(span.split())


def _commands() -> list[Command]:
    found: list[Command] = []
    for document in DOCUMENTS:
        text = (ROOT / document).read_text(encoding="utf-8")
        found += [*_block_commands(document, text), *_inline_commands(document, text)]
    return found


def _without_assignments(words: tuple[str, ...]) -> tuple[str, ...]:
    """`TEMPORAL_PROFILE=prod python worker.py` -> `python worker.py`."""
    index = 0
    while index < len(words) and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[index]):
        index += 1
    return words[index:]


def _program(words: tuple[str, ...]) -> str:
    """The program as the README names it: `.venv/bin/turnkeeper` is `turnkeeper`, and
    `python worker.py` is `worker.py`."""
    if not words:
        return ""
    program = words[0].removeprefix(".venv/bin/")
    if program in {"python", "python3"} and len(words) > 1 and words[1] == "worker.py":
        return "worker.py"
    return program


def _options(words: tuple[str, ...]) -> set[str]:
    """The option names of a command line or a syntax summary (`[--yes|--no]`, `--a/--no-a`)."""
    found = set()
    for word in words:
        for part in re.split(r"[|/\[\]]", word):
            if part.startswith("--"):
                found.add(part.split("=", 1)[0])
    return found


# ---- turnkeeper ------------------------------------------------------------------------------


@functools.cache
def _turnkeeper_app() -> Any:
    return typer.main.get_command(app)


def _turnkeeper_command(words: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
    """The typer command the words name, and the words after its name."""
    command = _turnkeeper_app()
    index = 0
    while index < len(words) and words[index] in (getattr(command, "commands", None) or {}):
        command = command.commands[words[index]]
        index += 1
    return command, words[index:]


def _check_turnkeeper(command: Command, words: tuple[str, ...]) -> None:
    found, rest = _turnkeeper_command(words[1:])
    if command.complete:
        # The command's own parser: unknown options, missing arguments and wrong types fail
        # exactly as they would at the prompt, but nothing runs.
        context = found.make_context(" ".join(words[:1]), list(rest))
        agent_file = context.params.get("agent")
        if agent_file is not None and (ROOT / agent_file).exists():
            # Read as `turnkeeper run` reads it, the workflow's cross-field checks included.
            build_request(RunOptions(input="a task", agent_file=ROOT / agent_file), short_id="0")
        return
    known = {o for p in found.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")}
    assert _options(rest) <= known | {"--help"}, f"no such option: {_options(rest) - known}"


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


def _flags(help_text: str) -> set[str]:
    return set(re.findall(r"(?m)^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)", help_text))


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
    flags = _flags(help_text) | _flags(_temporal("options"))  # and the global options
    assert _options(words) <= flags, f"no such flag: {_options(words) - flags}"
    if command.complete:
        _check_temporal_values(path, _option_values(words))


def _handler_names() -> set[str]:
    found = set()
    for workflow_class in (AgentTurnWorkflow, AgentSessionWorkflow, ApprovalCacheWorkflow):
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
            PAYLOADS[values["--name"]].model_validate(json.loads(values["--input"]))


def _placeholder(value: str) -> bool:
    return bool(re.fullmatch(r"<[^>]*>", value))


# ---- python, pip, pytest, export -------------------------------------------------------------


def _module_flags(module: str) -> set[str]:
    """The option strings a module's source defines. Not its `--help`: a module without an
    argument parser runs at once whatever it is given (`bench.providers` measures)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, f"no module {module}"
    source = Path(spec.origin)
    if source.name == "__init__.py":
        source = source.with_name("__main__.py")
    return set(re.findall(r"[\"'](--[a-z][a-z0-9-]*)[\"']", source.read_text(encoding="utf-8")))


@functools.cache
def _worker_flags() -> set[str]:
    help_text = io.StringIO()
    with contextlib.redirect_stdout(help_text), pytest.raises(SystemExit):
        worker_cli.parse_args(["--help"])
    return _flags(help_text.getvalue())


def _check_worker(command: Command, words: tuple[str, ...]) -> None:
    arguments = list(words[words.index("worker.py") + 1 :])
    if not command.complete:
        assert _options(words) <= _worker_flags(), f"no flag {_options(words) - _worker_flags()}"
        return
    try:
        worker_cli.parse_args(arguments)  # the worker's own parser; exits on a bad flag
    except SystemExit as refused:
        pytest.fail(f"worker.py refuses {arguments}: exit {refused.code}")


def _check_python(command: Command, words: tuple[str, ...]) -> None:
    assert words[1:2] == ("-m",), "only `python -m …` and `python worker.py` are documented"
    module, arguments = words[2], words[3:]
    if module == "venv":
        return
    assert _options(arguments) <= _module_flags(module), f"{module} defines no such option"


def _check_pip(command: Command, words: tuple[str, ...]) -> None:
    assert words[1:2] == ("install",), "pip is documented for installing turnkeeper only"
    targets = [word for word in words[2:] if not word.startswith("-")]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for target in targets:
        # Not from a package index, where no turnkeeper is published: a checkout or a git URL.
        match = re.fullmatch(r"(?:\.|turnkeeper)(?:\[([\w,]+)\])?(?: @ git\+\S.*)?", target)
        assert match, f"installs {target!r}: turnkeeper is installed from a checkout or git URL"
        assert target.startswith(".") or " @ git+" in target, f"{target!r} from a package index"
        wanted = set((match.group(1) or "").split(",")) - {""}
        assert wanted <= set(extras["optional-dependencies"]), f"no extra {wanted}"


def _check_pytest(command: Command, words: tuple[str, ...]) -> None:
    for word in words[1:]:
        assert word.startswith("-") or (ROOT / word.split("::")[0]).exists(), word


def _check_export(command: Command, words: tuple[str, ...]) -> None:
    for assignment in words[1:]:
        name, _, value = assignment.partition("=")
        if name.startswith(("TURNKEEPER_", "AGENT_")):
            reference = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
            assert f"`{name}`" in reference, f"{name} is not a documented variable"
        if name == names.PROVIDERS_ENV:
            named_endpoints(value)  # the worker's own reading of it


def _check_mkdocs(command: Command, words: tuple[str, ...]) -> None:
    # MkDocs' own command-line parser: the subcommand and its options, as the prompt reads them.
    from mkdocs.__main__ import cli

    subcommand = cli.commands.get(words[1]) if len(words) > 1 else None
    assert subcommand is not None, f"mkdocs has no command {words[1:2]}"
    subcommand.make_context(f"mkdocs {words[1]}", list(words[2:]))
    assert (ROOT / "mkdocs.yml").exists()


def _check_ruff(command: Command, words: tuple[str, ...]) -> None:
    assert words[1:2] in (("check",), ("format",)), "ruff is documented for checking only"
    for word in words[2:]:
        assert word.startswith("-") or (ROOT / word).exists(), f"ruff {words[1]}: no {word}"


CHECKS: dict[str, Callable[[Command, tuple[str, ...]], None]] = {
    "ruff": _check_ruff,
    "mkdocs": _check_mkdocs,
    "turnkeeper": _check_turnkeeper,
    "temporal": _check_temporal,
    "worker.py": _check_worker,
    "python": _check_python,
    "python3": _check_python,
    "pip": _check_pip,
    "pytest": _check_pytest,
    "export": _check_export,
}
COMMANDS = _commands()


def test_the_documents_show_commands() -> None:
    programs = {_program(_without_assignments(command.words)) for command in COMMANDS}
    assert {"turnkeeper", "temporal", "worker.py", "pip"} <= programs


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_a_documented_command_is_valid_as_written(command: Command) -> None:
    words = _without_assignments(command.words)
    program = _program(words)
    assert program in CHECKS, f"{program}: a documented program with no check here; add one"
    CHECKS[program](command, words)
    for word in words:
        if REPO_PATH.match(word) and not word.startswith("<"):
            assert (ROOT / word.split("::")[0]).exists(), f"{word} is not in the repository"


def test_the_entry_points_the_readme_runs_answer() -> None:
    # As installed and run from a checkout: the console script and the worker script.
    console = Path(sys.executable).with_name("turnkeeper")
    for argv in ([str(console), "--help"], [sys.executable, "worker.py", "--help"]):
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
