"""docs/reference.md states what the code does, in the places where it has drifted before: the
signatures of the library's functions and handle methods (checked with `inspect` against the
code), the defaults of the commands' options, the worker's flags and the variables (checked
against the parsers and `Settings` themselves), the content store's thresholds, and every
`turnkeeper.X` it names. The names the reference lists are compared in both directions by
tests/unit/test_reference.py.

A signature is written as a call: `name(a, b=default, c=, …)`. Its parameter names must be the
function's; a default written as a Python literal must be the function's default (`[…]`, `{…}`,
`…` and a bare `c=` say nothing about it); and a signature that lists everything (the library
table's own, the test kit's, or any other of four or more parameters without a bare `…`) must
list every parameter.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import turnkeeper
import turnkeeper.testing

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference.md"
GUIDE = ROOT / "docs" / "guide.md"
HANDLES = {"TurnHandle": turnkeeper.TurnHandle, "SessionHandle": turnkeeper.SessionHandle}
CALL = re.compile(r"`(?:await )?(?:turnkeeper\.)?([A-Za-z_][\w.]*)\(((?:[^`()]|\([^`()]*\))*)\)`")


def _table_rows(marker: str) -> list[list[str]]:
    lines = REFERENCE.read_text(encoding="utf-8").splitlines()
    rows: list[list[str]] = []
    for index, line in enumerate(lines):
        if line.strip() == f"<!-- names: {marker} -->":
            for row in lines[index + 3 :]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]])
    assert rows, f"no table marked {marker}"
    return rows


def _arguments(text: str) -> list[str]:
    """The top-level comma-separated parts of an argument list."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [part for part in [*parts, current.strip()] if part]


def _target(name: str) -> Callable[..., Any] | None:
    """The function, class or handle method a documented call names; None for other names."""
    owner, _, method = name.rpartition(".")
    if owner in HANDLES:
        return getattr(HANDLES[owner], method, None)
    if owner == "TurnTestEnvironment":
        return getattr(turnkeeper.testing.TurnTestEnvironment, method, None)
    for module in (turnkeeper, turnkeeper.testing):
        if not owner and name in getattr(module, "__all__", ()):
            return getattr(module, name)
    return None


def _parameters(target: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    parameters = dict(inspect.signature(target).parameters)
    parameters.pop("self", None)
    return parameters


def signature_problems(name: str, arguments: str, whole: bool) -> list[str]:
    target = _target(name)
    assert target is not None, name
    try:
        parameters = _parameters(target)
    except ValueError:  # no signature to read (an exception class without its own __init__)
        return []
    parts = _arguments(arguments)
    partial = "…" in parts
    # Four parameters or more without a bare `…` read as the whole signature, not an example
    # call: their values are the defaults.
    whole = whole or (len(parts) >= 4 and not partial)
    documented: set[str] = set()
    for index, part in enumerate(part for part in parts if part != "…"):
        key, problem = _parameter_of(name, part, index, parameters, whole)
        if problem:
            return [problem]
        if key is None:
            continue
        documented.add(key)
        value = part.partition("=")[2]
        problem = _default_problem(name, parameters[key], value) if "=" in part and whole else None
        if problem:
            return [problem]
    missing = sorted(parameters.keys() - documented)
    if whole and not partial and missing:
        return [f"{name}({arguments}) leaves out {', '.join(missing)}"]
    return []


def _parameter_of(
    name: str, part: str, index: int, parameters: dict[str, inspect.Parameter], whole: bool
) -> tuple[str | None, str | None]:
    """The parameter a documented argument stands for (None: one `**kwargs` takes), or why it
    stands for none."""
    positional = [
        key
        for key, parameter in parameters.items()
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
    ]
    key, equals, _ = part.partition("=")
    key = key.strip()
    if not equals and not key.startswith("*") and index < len(positional):
        if key == positional[index] or not re.fullmatch(r"[a-z_]\w*", key):
            return positional[index], None  # its name, or an example value (`"why"`)
        if whole:
            return None, f"{name}: parameter {index + 1} is {positional[index]!r}, not {key!r}"
        return positional[index], None  # in an example call, the caller's variable (`report`)
    key = key.lstrip("*")
    if key in parameters:
        return key, None
    if equals and any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
        return None, None  # a keyword that `**kwargs` takes (`call("refund", order_id="1042")`)
    return None, f"{name}: no parameter {key!r} (it has {', '.join(parameters)})"


def _default_problem(name: str, parameter: inspect.Parameter, value: str) -> str | None:
    """Why a documented `key=value` is not the parameter's default, or None when it is (or
    when the value says nothing about the default: `[…]`, `x=`, an example name)."""
    if "…" in value or not value.strip():
        return None
    try:
        literal = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        return None  # an example (`output_type=Model`), not the default
    if parameter.default != literal:
        return f"{name}: {parameter.name}={value} but the default is {parameter.default!r}"
    return None


def _documented_calls(path: Path) -> Iterator[tuple[str, str, str]]:
    text = path.read_text(encoding="utf-8")
    for match in CALL.finditer(text):
        line = text[: match.start()].count("\n") + 1
        yield f"{path.name}:{line}", match.group(1), " ".join(match.group(2).split())


def _library_signatures() -> Iterator[tuple[str, str, str]]:
    """The library table's signatures: a row's own name called, or its handle's methods."""
    for row in _table_rows("library"):
        name = row[0].strip("`")
        for match in CALL.finditer(row[1]):
            called = match.group(1)
            if called == name or name in HANDLES:
                yield (f"{name}.{called}" if name in HANDLES else called), match.group(2), name


def test_the_library_tables_signatures_are_the_codes() -> None:
    problems = [
        problem
        for called, arguments, _ in _library_signatures()
        if _target(called) is not None
        for problem in signature_problems(called, arguments, whole=True)
    ]
    assert problems == []


def test_the_test_kits_signatures_are_the_codes() -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    kit = text[text.index("## Test kit") :]
    rows = [line.split("|")[1].strip() for line in kit.splitlines() if line.startswith("| `")]
    problems = []
    for cell in rows:
        match = CALL.fullmatch(cell)
        if match and _target(match.group(1)) is not None:
            problems += signature_problems(match.group(1), match.group(2), whole=True)
    assert problems == []
    assert len(rows) > 8


DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_every_call_of_a_library_name_in_the_docs_fits_its_signature(document: Path) -> None:
    problems = [
        f"{where}: {problem}"
        for where, called, arguments in _documented_calls(document)
        if _target(called) is not None
        for problem in signature_problems(called, arguments, whole=False)
    ]
    assert problems == []


def test_every_turnkeeper_name_the_reference_mentions_exists() -> None:
    text = REFERENCE.read_text(encoding="utf-8") + GUIDE.read_text(encoding="utf-8")
    missing = []
    for dotted in sorted(set(re.findall(r"`(turnkeeper(?:\.[A-Za-z_]\w*)+)", text))):
        parts = dotted.split(".")
        found: Any = turnkeeper
        for index, part in enumerate(parts[1:], 2):
            if hasattr(found, part):
                found = getattr(found, part)
                continue
            try:
                found = importlib.import_module(".".join(parts[:index]))
            except ImportError:
                missing.append(dotted)
                break
    assert missing == []
