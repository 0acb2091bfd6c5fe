"""`turnkeeper demo` end to end, as a user runs it: its own dev server on free ports, a worker in
the process, the offline demo model, and the approval answered by flag or on stdin."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.ports import free_ports
from turnkeeper.console.demo import SAMPLE_NOTES

DEMO_TIMEOUT_S = 60


def port_is_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def turnkeeper_command() -> list[str]:
    script = Path(sys.executable).with_name("turnkeeper")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from turnkeeper.console.cli import app; app()"]


def user_environment() -> dict[str, str]:
    """The environment of a user who never activated the virtualenv: its scripts are not on PATH.
    A Temporal Cloud profile of the developer's must not redirect the demo."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "AGENT_"))}
    return {**env, "PATH": os.defpath, "COLUMNS": "300"}


def run_demo(
    tmp_path: Path, *flags: str, stdin: str | None = None, cwd: Path | None = None
) -> tuple[str, int, int]:
    """Run the demo in a subprocess; (its output, its gRPC port, its UI port)."""
    port, ui_port = free_ports(2)
    arguments = [
        *turnkeeper_command(), "demo", *flags, "--port", str(port), "--ui-port", str(ui_port),
        "--data-dir", str(tmp_path / "data"), "--workspace", str(tmp_path / "workspace"),
    ]  # fmt: skip
    done = subprocess.run(
        arguments,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
        cwd=cwd or tmp_path,
        env=user_environment(),
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout, port, ui_port


def first_lines() -> list[str]:
    return [text.splitlines()[0].lstrip("# ") for text in SAMPLE_NOTES.values()]


@pytest.mark.parametrize(
    ("flags", "stdin"), [(["--yes"], None), ([], "y\n")], ids=["--yes", "stdin"]
)
def test_the_demo_saves_the_summary_once_approved(
    tmp_path: Path, flags: list[str], stdin: str | None
) -> None:
    output, port, ui_port = run_demo(tmp_path, *flags, stdin=stdin)

    assert "[offline demo model] I read the workspace and saved summary.md" in output
    link = f"http://localhost:{ui_port}/namespaces/default/workflows/turn-demo-summarizer-"
    assert link in output
    assert "write_file waits for your approval" in output
    assert "turnkeeper approve turn-demo-summarizer-" in output
    assert "temporal workflow signal --workflow-id turn-demo-summarizer-" in output
    summary = (tmp_path / "workspace" / "summary.md").read_text()
    for line in first_lines():
        assert line in summary
    assert not port_is_open(port), "the demo left its dev server running"


def test_the_demo_rejected_writes_nothing_and_says_why(tmp_path: Path) -> None:
    output, _, _ = run_demo(tmp_path, "--no")

    assert "[offline demo model] I did not save the summary" in output
    assert "rejected with --no" in output
    assert not (tmp_path / "workspace" / "summary.md").exists()


def test_the_demo_keeps_a_workspace_that_has_files(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "plan.md").write_text("# Plan: try the demo\n", encoding="utf-8")

    output, _, _ = run_demo(tmp_path, stdin="n\nnot now\n")

    assert "rejected: not now" in output
    assert sorted(p.name for p in workspace.iterdir()) == ["plan.md"]
    assert "diagnostics go to" in output and '{"event"' not in output  # logs went to the file
    assert "worker started" in (tmp_path / "data" / "turnkeeper-demo.log").read_text()
