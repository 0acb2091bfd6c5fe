"""The memory probe reads our workflow's private parts (the turn, its view, the stream's log): a
refactor that moves them must move the probe too, so a small run of it is part of the tests."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_parked_memory_probe_measures_each_part_of_a_parked_turn(tmp_path: Path) -> None:
    out = tmp_path / "parked.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.parked_memory", "--n", "4", "--warm-up", "2", "--out", out],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    parts = json.loads(out.read_text())["parts_kib_per_turn"]
    assert parts["instances"] == 6
    assert parts["Turn.request"] > 0 and parts["TurnView and stream, the rest"] > 0
