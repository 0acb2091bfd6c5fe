"""A bad variable stops `python worker.py` and the `turnkeeper` console with one line naming
the variable, not a traceback; the console reads only the store's variables, never the
worker's (the settings themselves are tested in tests/unit/worker/test_worker_tuning.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


WORKER = [sys.executable, "worker.py"]
CONSOLE = [str(Path(sys.executable).with_name("turnkeeper")), "status", "x"]


@pytest.mark.parametrize(
    ("command", "variables", "says"),
    [
        (
            WORKER,
            {"TURNKEEPER_MAX_CACHED_WORKFLOWS": "lots"},
            "TURNKEEPER_MAX_CACHED_WORKFLOWS must be a whole number, got 'lots'",
        ),
        (
            CONSOLE,
            {"TURNKEEPER_STORE_URL": "minio.local/bucket"},
            "TURNKEEPER_STORE_URL must be s3://bucket or s3://bucket/prefix",
        ),
        # A client reads the store's variables and none of the worker's: a worker-only
        # mistake does not stop it, which gets as far as dialling (a port nothing serves).
        (
            CONSOLE,
            {"TURNKEEPER_MAX_CACHED_WORKFLOWS": "lots", "TEMPORAL_ADDRESS": "127.0.0.1:1"},
            "Cannot reach Temporal at 127.0.0.1:1",
        ),
    ],
    ids=["worker", "console", "console ignores the worker's variables"],
)
def test_the_worker_and_the_console_say_which_variable_is_wrong(
    command: list[str], variables: dict[str, str], says: str
) -> None:
    env = {**os.environ, **variables}

    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)

    assert done.returncode != 0
    assert says in done.stderr
    assert "Traceback" not in done.stderr
