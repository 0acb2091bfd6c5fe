"""One import namespace: every module of the project imports as `turnkeeper.…`, and none of them
imports a top-level `contracts`, `workflows`, `activities` or `worker` (which would load a second
copy of each module from the checkout, with pydantic models that do not compare equal)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUTSIDE_NAMES = ("contracts", "workflows", "activities", "worker")


def test_every_module_imports_under_turnkeeper_only() -> None:
    # A fresh interpreter, so that modules the test run imported already cannot hide a stray one.
    script = (
        "import importlib, pkgutil, sys, turnkeeper\n"
        "for info in pkgutil.walk_packages(turnkeeper.__path__, 'turnkeeper.'):\n"
        "    importlib.import_module(info.name)\n"
        f"stray = sorted(m for m in sys.modules if m.split('.')[0] in {OUTSIDE_NAMES!r})\n"
        "print(len([m for m in sys.modules if m.startswith('turnkeeper.')]), stray)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    count, stray = done.stdout.strip().split(" ", 1)
    assert stray == "[]"
    assert int(count) > 60


def test_the_card_folders_are_the_packages_subpackages() -> None:
    import turnkeeper.activities
    import turnkeeper.contracts
    import turnkeeper.workflows

    for package, folder in (
        (turnkeeper.contracts, "contracts"),
        (turnkeeper.workflows, "workflows"),
        (turnkeeper.activities, "activities"),
    ):
        assert Path(package.__file__).parent == REPO / folder
    names = {info.name for info in pkgutil.iter_modules(turnkeeper.activities.__path__)}
    assert {"llm", "mcp", "store", "tools"} <= names


def test_the_worker_room_with_its_composition_root_is_a_subpackage_of_turnkeeper() -> None:
    import turnkeeper.worker

    assert Path(turnkeeper.worker.__file__).parent == REPO / "turnkeeper" / "worker"
    names = {info.name for info in pkgutil.iter_modules(turnkeeper.worker.__path__)}
    assert "wiring" in names
