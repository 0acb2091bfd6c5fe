"""The maps in `workflows/__init__.py` and `activities/__init__.py` name every room and module
there is, and nothing that is not: a hand-written map that misses the newest modules tells a
newcomer the wrong room for a change.

A map is the package docstring's lines: a room is a line that starts with `name/` at the margin,
a module a line indented four spaces that starts with `name.py` (under the room above it, or at
the top before the first room). `workflows/` names every module of its rooms; `activities/` names
its rooms and its own modules, and each room's `__init__` maps the rest.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ROOM = re.compile(r"^(\w+)/\s")
MODULE = re.compile(r"^ {4}(\w+\.py)\s")


def named(package: Path) -> set[str]:
    """The rooms (`budgets/`) and modules (`budgets/checks.py`, `failures.py`) a map names."""
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    found: set[str] = set()
    room = ""
    for line in docstring.splitlines():
        if match := ROOM.match(line):
            room = f"{match.group(1)}/"
            found.add(room)
        elif match := MODULE.match(line):
            found.add(room + match.group(1))
    return found


def present(package: Path, *, rooms_in_full: bool) -> set[str]:
    """The rooms and modules there are: a room is a folder with an `__init__.py`."""
    found = {path.name for path in package.glob("*.py") if path.name != "__init__.py"}
    for init in package.glob("*/__init__.py"):
        room = init.parent
        found.add(f"{room.name}/")
        if rooms_in_full:
            found |= {f"{room.name}/{p.name}" for p in room.glob("*.py") if p.name != "__init__.py"}
    return found


@pytest.mark.parametrize(("folder", "rooms_in_full"), [("workflows", True), ("activities", False)])
def test_the_map_names_every_room_and_module_and_nothing_else(
    folder: str, rooms_in_full: bool
) -> None:
    package = ROOT / folder
    there, mapped = present(package, rooms_in_full=rooms_in_full), named(package)
    assert sorted(there - mapped) == [], f"{folder}/__init__.py's map lacks these"
    assert sorted(mapped - there) == [], f"{folder}/__init__.py's map names what is not there"


def test_a_map_line_is_read_as_a_room_or_a_module() -> None:
    assert ROOM.match("budgets/        What a turn may spend.")
    assert not ROOM.match("    budgets/checks.py")
    assert (
        MODULE.match("    checks.py                Limits, what is left.").group(1) == "checks.py"
    )
    assert not MODULE.match("        and a wrapped description line.py ")
