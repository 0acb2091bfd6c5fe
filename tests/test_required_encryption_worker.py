"""`python worker.py` under `TURNKEEPER_REQUIRE_ENCRYPTION` refuses to start without keys, or with
a misspelt value, in one line (the codec, converter and variable are tested in
tests/unit/payloads/test_required_encryption.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from turnkeeper.payloads.keyring import new_key_entry

REPO = Path(__file__).resolve().parents[1]
KEYS = new_key_entry("k1")


def run_worker(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "worker.py"],
        cwd=REPO,
        # Nothing listens there: a worker that got as far as connecting would say so instead.
        env={
            "PATH": "/usr/bin:/bin",
            "TEMPORAL_ADDRESS": "127.0.0.1:1",
            "TURNKEEPER_DATA_DIR": str(tmp_path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_worker_that_requires_encryption_without_keys_refuses_to_start(
    tmp_path: Path,
) -> None:
    done = run_worker(tmp_path, TURNKEEPER_REQUIRE_ENCRYPTION="1")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("TURNKEEPER_REQUIRE_ENCRYPTION is set but TURNKEEPER_ENCRYPTION_KEYS")
    assert "turnkeeper keys new" in last


def test_a_worker_with_a_misspelt_requirement_refuses_to_start(tmp_path: Path) -> None:
    env: dict[str, Any] = {"TURNKEEPER_ENCRYPTION_KEYS": KEYS}
    done = run_worker(tmp_path, TURNKEEPER_REQUIRE_ENCRYPTION="ture", **env)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("TURNKEEPER_REQUIRE_ENCRYPTION must be")
