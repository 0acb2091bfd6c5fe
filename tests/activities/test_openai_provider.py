"""The worker refuses a bad `TURNKEEPER_PROVIDERS` before it connects to anything: `worker.py`
run as its own process. The providers and the named endpoints themselves are tested in the fast
tier (tests/unit/activities/providers/)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_the_worker_refuses_to_start_on_a_bad_configuration(tmp_path: Path) -> None:
    # Nothing listens at the address: the refusal must come before any connection attempt.
    env = {
        **os.environ,
        "TURNKEEPER_PROVIDERS": '{"local": {"kind": "ollama", "base_url": "http://x"}}',
        "TEMPORAL_ADDRESS": "127.0.0.1:9",
        "TURNKEEPER_DATA_DIR": str(tmp_path),
    }
    worker = Path(__file__).parents[2] / "worker.py"

    done = subprocess.run(
        [sys.executable, str(worker)], env=env, capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 1, done.stderr
    assert "TURNKEEPER_PROVIDERS.local.kind" in done.stderr
    assert "127.0.0.1:9" not in done.stderr
