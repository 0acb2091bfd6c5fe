"""Every command the README and the documentation pages show is valid as written, for every
program that can be checked in-process: a `turnkeeper` command is parsed by the typer app itself
(the command, its arguments and its options, with their types), `python worker.py` by the
worker's own argument parser, `python -m` against the module's options, `pip`, `pytest`, `ruff`
and `mkdocs` as their parsers read them; files named must exist and exported variables must be
documented. Inline commands (`turnkeeper approve ID CALL_ID [--reason R]`) are syntax summaries:
only their subcommand and their option names are checked. The `temporal` commands are checked
against the bundled Temporal CLI, a program run, in tests/test_readme_commands.py; the commands
are read out of the documents by tests/support/documented_commands.py.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer.main
from turnkeeper.activities.providers.endpoints import named_endpoints
from turnkeeper.contracts import names

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
from turnkeeper.client.requests import RunOptions, build_request
from turnkeeper.console import worker_cli
from turnkeeper.console.cli import app

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
    assert option_names(rest) <= known | {"--help"}, f"no such option: {option_names(rest) - known}"


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
    return flag_names(help_text.getvalue())


def _check_worker(command: Command, words: tuple[str, ...]) -> None:
    arguments = list(words[words.index("worker.py") + 1 :])
    if not command.complete:
        assert option_names(words) <= _worker_flags(), (
            f"no flag {option_names(words) - _worker_flags()}"
        )
        return
    try:
        worker_cli.parse_args(arguments)  # the worker's own parser; exits on a bad flag
    except SystemExit as refused:
        pytest.fail(f"worker.py refuses {arguments}: exit {refused.code}")


def _check_python(command: Command, words: tuple[str, ...]) -> None:
    if words[1].startswith("examples/"):
        # An example program: it exists, and its source defines the options shown.
        script = ROOT / words[1]
        assert script.suffix == ".py" and script.is_file(), f"no example program {words[1]}"
        flags = set(re.findall(r"[\"'](--[a-z][a-z0-9-]*)[\"']", script.read_text()))
        assert option_names(words[2:]) <= flags, f"{words[1]} defines no such option"
        return
    assert words[1:2] == ("-m",), "only `python -m …`, `python worker.py` and examples/ programs"
    module, arguments = words[2], words[3:]
    if module == "venv":
        return
    assert option_names(arguments) <= _module_flags(module), f"{module} defines no such option"


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


# pytest's options that a documented command gives a value, and the values each takes.
_PYTEST_VALUES = {
    "-n": lambda value: value == "auto" or value.isdigit(),
    "--dist": lambda value: value in {"load", "loadscope", "loadfile", "loadgroup", "worksteal"},
    "-k": lambda value: bool(value),
    "-m": lambda value: bool(value),
    "-p": lambda value: bool(value),
}


def _check_pytest(command: Command, words: tuple[str, ...]) -> None:
    rest = iter(words[1:])
    for word in rest:
        if word in _PYTEST_VALUES:
            value = next(rest, "")
            assert _PYTEST_VALUES[word](value), f"{word} {value!r}"
        else:
            assert word.startswith("-") or (ROOT / word.split("::")[0]).exists(), word


def _check_export(command: Command, words: tuple[str, ...]) -> None:
    for assignment in words[1:]:
        name, _, value = assignment.partition("=")
        if name.startswith(("TURNKEEPER_", "AGENT_")):
            reference = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
            assert f"`{name}`" in reference, f"{name} is not a documented variable"
        if name == names.PROVIDERS_ENV:
            named_endpoints(value)  # the worker's own reading of it


def _check_curl(command: Command, words: tuple[str, ...]) -> None:
    # A URL of `turnkeeper serve`: its path is one the HTTP API's app routes.
    from types import SimpleNamespace
    from urllib.parse import urlsplit

    from turnkeeper.http.app import create_app

    # Routes only; with conversations, so that the served agents' chat routes are there too.
    served = SimpleNamespace(client=None)
    app = create_app(turns=None, tokens=None, conversations=served)  # type: ignore[arg-type]
    for word in words:
        if word.startswith("http://127.0.0.1:8787"):
            path = urlsplit(word).path
            routed = [r for r in app.routes if r.path_regex.match(path)]  # type: ignore[attr-defined]
            assert routed, f"{path}: no endpoint of the HTTP API"


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


def _check_npm(command: Command, words: tuple[str, ...]) -> None:
    # Only `npm ci --prefix DIR` is documented: an install from a committed lock file.
    assert words[1:2] == ("ci",), "npm is documented for locked installs (npm ci) only"
    assert "--prefix" in words, "npm ci names the folder of its package.json with --prefix"
    folder = ROOT / words[words.index("--prefix") + 1]
    assert (folder / "package.json").exists() and (folder / "package-lock.json").exists()


CHECKS: dict[str, Callable[[Command, tuple[str, ...]], None]] = {
    "npm": _check_npm,
    "ruff": _check_ruff,
    "mkdocs": _check_mkdocs,
    "turnkeeper": _check_turnkeeper,
    "worker.py": _check_worker,
    "python": _check_python,
    "python3": _check_python,
    "pip": _check_pip,
    "pytest": _check_pytest,
    "export": _check_export,
    "curl": _check_curl,
}
COMMANDS = documented_commands()
# The Temporal CLI's commands are checked against the program itself, in the slower tier.
IN_PROCESS = [c for c in COMMANDS if program_of(without_assignments(c.words)) != "temporal"]


def test_the_documents_show_commands() -> None:
    programs = {program_of(without_assignments(command.words)) for command in COMMANDS}
    assert {"turnkeeper", "temporal", "worker.py", "pip"} <= programs


@pytest.mark.parametrize("command", IN_PROCESS, ids=str)
def test_a_documented_command_is_valid_as_written(command: Command) -> None:
    words = without_assignments(command.words)
    program = program_of(words)
    assert program in CHECKS, f"{program}: a documented program with no check here; add one"
    CHECKS[program](command, words)
    check_repository_paths(words)
