"""A bad worker-tuning variable stops `python worker.py` and the `turnkeeper` console with one
line naming the variable, not a traceback (the settings themselves are tested in
tests/unit/worker/test_worker_tuning.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "worker.py"],
        [str(Path(sys.executable).with_name("turnkeeper")), "status", "x"],
    ],
    ids=["worker", "console"],
)
def test_the_worker_and_the_console_say_which_variable_is_wrong(command: list[str]) -> None:
    env = {**os.environ, "TURNKEEPER_MAX_CACHED_WORKFLOWS": "lots"}

    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)

    assert done.returncode != 0
    assert "TURNKEEPER_MAX_CACHED_WORKFLOWS must be a whole number, got 'lots'" in done.stderr
    assert "Traceback" not in done.stderr
