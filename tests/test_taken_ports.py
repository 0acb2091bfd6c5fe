"""A dev-server port held by something that is not a Temporal server, at each command that starts
one (run as a process): it fails within about a second and names the flag of that command which
chooses another port. (A Temporal server already on the port is reused: test_devserver; the
`DevServer` and `run_worker` refusals are in tests/unit/devtools/test_devserver.py and
tests/unit/worker/test_run.py.)"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_demo import turnkeeper_command
from tests.support.ports import free_ports, silent_listener
from tests.test_devserver import REPO_ROOT, own_environment

ENTRY_POINTS = {
    "demo": ([*turnkeeper_command(), "demo", "--yes"], "--port", "--ui-port"),
    "worker.py": ([sys.executable, "worker.py", "--dev"], "--dev-port", "--ui-port"),
}


@pytest.mark.parametrize("taken", ["grpc", "ui"])
@pytest.mark.parametrize("entry_point", list(ENTRY_POINTS))
def test_each_command_names_its_own_flag(tmp_path: Path, entry_point: str, taken: str) -> None:
    command, port_flag, ui_port_flag = ENTRY_POINTS[entry_point]
    (free,) = free_ports(1)
    with silent_listener() as busy:
        port, ui_port = (busy, free) if taken == "grpc" else (free, busy)
        env = {**own_environment(tmp_path), "COLUMNS": "300"}
        arguments = [*command, port_flag, str(port), "--ui-port", str(ui_port)]
        started = time.monotonic()
        done = subprocess.run(
            arguments, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60
        )
    # The command's own start-up (imports) and a second at most for the port, well under the
    # dev server's 30-s start-up timeout that a command not checking its ports would wait out
    # (on two loaded cores the imports alone have taken 15 s).
    assert time.monotonic() - started < 25
    assert done.returncode == 1, done.stdout + done.stderr
    named = port_flag if taken == "grpc" else ui_port_flag
    assert "is taken" in done.stderr and f"choose another port with {named}." in done.stderr
    assert not (tmp_path / "data" / "temporal.sqlite").exists()
