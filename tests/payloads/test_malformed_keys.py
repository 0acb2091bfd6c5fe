"""`python worker.py` with a malformed TURNKEEPER_ENCRYPTION_KEYS stops with one line naming the
entry, never a traceback and never a key (the keyring's parsing is tested in
tests/unit/payloads/test_encryption_parts.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_worker_refuses_a_malformed_variable_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "worker.py"],
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "TURNKEEPER_ENCRYPTION_KEYS": "k1:tooshort"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith("TURNKEEPER_ENCRYPTION_KEYS, entry 1")
    assert "Traceback" not in done.stderr
