"""The package lines of pyproject.toml's `[tool.importlinter]` hold: contracts <- payloads | ground
<- workflows | activities <- devtools <- client <- worker <- http <- console | testing; the client
loads no code that runs turns (workflows, activities, worker), no dev tools and no terminal; the
HTTP API none of that either; the test kit neither the console nor the HTTP API. An import that
crosses one fails CI here, naming the import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.package_lines import ROOT, installed_layout

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(layout: Path) -> subprocess.CompletedProcess[str]:
    # Run from the copy, with it first on the path: the checkout's own `turnkeeper/` (or the
    # editable install's finder) must not be the package grimp reads.
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        capture_output=True,
        text=True,
        cwd=layout,
        env={**os.environ, "PYTHONPATH": str(layout)},
        timeout=120,
        check=False,
    )


def test_every_import_keeps_to_the_package_lines(tmp_path: Path) -> None:
    checked = lint_imports(installed_layout(tmp_path))

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 broken" in checked.stdout


@pytest.mark.parametrize(
    ("module", "source", "reported"),
    [
        pytest.param(
            "activities/crossing.py",
            "import turnkeeper.worker.settings\n",
            "turnkeeper.activities.crossing -> turnkeeper.worker.settings",
            id="an activity that reads the settings",
        ),
        pytest.param(
            "workflows/crossing.py",
            "from turnkeeper.activities.tools import registry\n",
            "turnkeeper.workflows is not allowed to import turnkeeper.activities",
            id="a workflow that imports an activity module",
        ),
        pytest.param(
            "activities/crossing.py",
            "from turnkeeper.worker import wiring\n",
            "turnkeeper.activities is not allowed to import turnkeeper.worker",
            id="an activity that imports the composition root",
        ),
        pytest.param(
            "client/crossing.py",
            "import rich\n",
            "turnkeeper.client.crossing -> rich",
            id="a client module that draws on the terminal",
        ),
        pytest.param(
            "client/crossing.py",
            "from turnkeeper.console import terminal\n",
            "turnkeeper.client.crossing -> turnkeeper.console.terminal",
            id="a client module that imports the console",
        ),
        pytest.param(
            "client/crossing.py",
            "from turnkeeper.activities.tools import registry\n",
            "turnkeeper.client.crossing -> turnkeeper.activities.tools.registry",
            id="a client module that imports an activity module",
        ),
        pytest.param(
            "client/crossing.py",
            "from turnkeeper.workflows.budgets import checks as budgets\n",
            "turnkeeper.client.crossing -> turnkeeper.workflows.budgets.checks",
            id="a client module that imports a workflow module",
        ),
        pytest.param(
            "http/crossing.py",
            "from turnkeeper.worker import settings\n",
            "turnkeeper.http.crossing -> turnkeeper.worker.settings",
            id="the HTTP API that imports the worker",
        ),
        pytest.param(
            "testing/crossing.py",
            "from turnkeeper.console import terminal\n",
            "turnkeeper.testing.crossing -> turnkeeper.console.terminal",
            id="the test kit that imports the console",
        ),
        pytest.param(
            "ground/crossing.py",
            "from turnkeeper.payloads import keyring\n",
            "turnkeeper.ground.crossing -> turnkeeper.payloads.keyring",
            id="the ground that imports payloads",
        ),
        pytest.param(
            "workflows/crossing.py",
            "from turnkeeper.payloads import keyring\n",
            "turnkeeper.workflows.crossing -> turnkeeper.payloads.keyring",
            id="a workflow that reads payloads itself",
        ),
        pytest.param(
            "contracts/crossing.py",
            "from turnkeeper.workflows.budgets import checks as budgets\n",
            "turnkeeper.contracts is not allowed to import turnkeeper.workflows",
            id="a contract that imports a workflow module",
        ),
    ],
)
def test_an_import_across_a_line_fails_naming_it(
    tmp_path: Path, module: str, source: str, reported: str
) -> None:
    layout = installed_layout(tmp_path)
    (layout / "turnkeeper" / module).write_text(source)

    checked = lint_imports(layout)

    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert reported in checked.stdout
