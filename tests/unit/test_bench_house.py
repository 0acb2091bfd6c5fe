"""`python -m bench.house` prints each of its static figures as a number, read from this
checkout: the files the loop names and reaches, the import arrows in workflows/, the duplicate
pairs per 1,000 lines and `Turn`'s shape. The values change with the code; that they are found
at all is what breaks when modules move (a class no longer found by name, a package grimp does
not see). The figure that runs a turn, modules per worker-tool call, is tested with the other
probes that need a server (tests/test_bench_probes.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r"\d+(\.\d+)?")
STATIC = "loop,arrows,duplicates,turn"


def printed_figures(figures: str) -> dict[str, str]:
    """Runs the script as its README says and returns its table: figure -> value."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.house", "--figures", figures],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.strip("|").split("|") for line in done.stdout.splitlines() if line[:2] == "| "]
    return {label.strip(): value.strip() for label, value in rows[1:]}


def test_the_house_figures_are_each_a_number() -> None:
    table = printed_figures(STATIC)

    counted = [
        "files the loop names",
        "lines of the files the loop names",
        "files the loop reaches",
        "lines of the files the loop reaches",
        "import arrows in workflows/, between modules",
        "the same, a sub-package as one",
        "Python lines",
        "`Turn` fields",
        "`Turn` methods",
        "`Turn` lines",
        "lines of the module of `Turn`",
        "`Turn` parts",
    ]
    if shutil.which("duplicates"):
        counted += ["duplicate pairs", "duplicate pairs per 1,000 lines"]
    else:
        assert table["duplicate pairs"].startswith("n/a")
    for figure in counted:
        assert NUMBER.fullmatch(table[figure]), (figure, table[figure])
    assert int(table["files the loop reaches"]) >= int(table["files the loop names"]) > 1
    assert int(table["`Turn` fields"]) > 0 and int(table["`Turn` methods"]) > 0
