"""After `turnkeeper demo` ended, every command it printed works when copied as printed, by a user
whose PATH does not have the virtualenv: the way back (a worker with the dev server and its Web
UI), `status` and `transcript` of the demo's turn, the Web UI link, and the ways to decide."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli.test_demo import run_demo, user_environment
from tests.test_devserver import REPO_ROOT

COME_BACK = "To come back to this run from this folder"


def printed_way_back(output: str) -> list[str]:
    """The worker command, `status`, `transcript` and the Web UI link, as the demo printed them."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if COME_BACK in line)
    commands = [line.strip() for line in lines[start + 1 :] if line.startswith("    ")]
    assert len(commands) == 4, output
    return commands


def printed_line(output: str, contains: str) -> str:
    return next(line.strip() for line in output.splitlines() if contains in line)


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", "-c", command],
        cwd=cwd,
        env=user_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@contextmanager
def running(command: str, cwd: Path, log: Path) -> Iterator[None]:
    """The printed worker command, until the block ends; ready once its worker polls."""
    with log.open("wb") as stderr:
        worker = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            env=user_environment(),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            # The shell and the worker it starts, stopped together as a terminal's Ctrl-C would.
            start_new_session=True,
        )
    try:
        for _ in range(600):
            if b'"worker started"' in log.read_bytes():
                break
            assert worker.poll() is None, log.read_text()
            time.sleep(0.1)
        else:
            raise AssertionError(f"the worker did not start:\n{log.read_text()}")
        yield
    finally:
        os.killpg(worker.pid, signal.SIGINT)
        worker.wait(timeout=60)
        for _ in range(600):  # the worker drains after its shell is gone
            try:
                os.killpg(worker.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)


@pytest.mark.parametrize("where", ["checkout", "elsewhere"])
def test_the_commands_the_demo_prints_work_after_it_ended(tmp_path: Path, where: str) -> None:
    # From the checkout, as the README's first command runs it, or from any other folder.
    cwd = REPO_ROOT if where == "checkout" else tmp_path
    output, _, _ = run_demo(tmp_path, "--yes", cwd=cwd)
    worker, status, transcript, web_ui = printed_way_back(output)
    approve = printed_line(output, " approve turn-demo-summarizer-")
    temporal = printed_line(output, " workflow signal --workflow-id turn-demo-summarizer-")
    module = " -m turnkeeper.console.worker_cli --dev"
    script = " worker.py --dev" if where == "checkout" else module
    assert script in worker

    with running(worker, cwd, tmp_path / "worker.log"):
        shown = shell(status, cwd)
        assert shown.returncode == 0, shown.stderr
        assert "completed" in shown.stdout
        read = shell(transcript, cwd)
        assert read.returncode == 0, read.stderr
        assert "[offline demo model] I read the workspace and saved summary.md" in read.stdout
        with urllib.request.urlopen(web_ui, timeout=10) as page:
            assert page.status == 200
        # The decision was made; what matters is that each command runs and reaches the turn.
        late = shell(approve, cwd)
        assert late.returncode == 1 and "is not waiting for approval" in late.stderr, late
        late = shell(temporal, cwd)
        assert late.returncode not in (0, 126, 127), late
        assert "completed" in late.stderr + late.stdout, late
