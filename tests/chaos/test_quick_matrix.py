"""CI runs the quick chaos matrix: a real dev server, worker processes killed and restarted, the
server killed and restarted on its SQLite file, the network cut, provider faults; sub-agent trees,
sessions, evaluation runs, the tenant and rate-limit ledgers and the HTTP API under kills. The
command exits 1 when any property fails for any turn (bench/chaos/properties.py) or row."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.timeout(1200)
def test_the_quick_chaos_matrix_holds_every_property() -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "bench.chaos", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1140,
    )
    table = finished.stdout
    print(table)
    rows = ("| worker kill -9", "| ledgers: ", "| HTTP API: ", "| sub-agent tree: worker kill -9")
    evals = ("| eval run: worker kill -9", "| eval run: server kill -9")
    for row in (*rows, "| session: worker kill -9", *evals):
        assert row in table, finished.stderr[-3000:]
    assert "VIOLATED" not in table
    assert finished.returncode == 0, finished.stderr[-3000:]
