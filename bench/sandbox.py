"""What the sandbox of `run_python` costs (docs/sandbox.md): a `run_python` of `print(1)`, from the
`sandbox_call` activity's start to its result, against `python3 -c 'print(1)'` run bare; and
what a 10 MiB folder adds to a call (restored before it, saved into the content store after it).

    .venv/bin/python -m bench.sandbox [--runs 20] [--out FILE]

The activity runs in this process (`ActivityEnvironment`), with the worker's default limits and a
local content store in a temporary folder, so the figures are the sandbox's own: bubblewrap's
namespaces and mounts, the prelude's tar, the archive's digest and the store's write. Bare and
sandboxed runs alternate, so that load meets them alike. `--out` writes `FIGURES` as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.sandbox.limits import SandboxLimits
from turnkeeper.activities.sandbox.sandbox_activity import SandboxActivities
from turnkeeper.activities.tools.workspace import Workspace
from turnkeeper.contracts.sandbox import SandboxSpec
from turnkeeper.contracts.sandbox_io import SandboxCallInput

from turnkeeper.payloads.content_store import LocalFolderStore

FIGURES = (
    "bare_ms_median",
    "sandboxed_ms_median",
    "sandboxed_over_bare",
    "ten_mib_call_ms_median",
    "ten_mib_extra_ms",
)
TEN_MIB = 10 * 1024 * 1024
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"


async def measure(runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        store = LocalFolderStore(root / "store")
        activities = SandboxActivities(SandboxLimits(), store, Workspace(root / "workspace"))
        environment = ActivityEnvironment()

        async def call(tool: str, source: str, state_ref: str | None = None) -> tuple[float, str]:
            key = "code" if tool == "run_python" else "command"
            request = SandboxCallInput(
                turn_id="bench",
                call_id=f"call-{time.monotonic_ns()}",
                tool=tool,
                input={key: source},
                spec=SandboxSpec(),
                state_ref=state_ref,
            )
            started = time.perf_counter()
            result = await environment.run(activities.sandbox_call, request)
            elapsed = (time.perf_counter() - started) * 1000
            assert not result.is_error and result.state is not None, result.content
            return elapsed, result.state.ref

        # The interpreter the sandbox runs (its PATH), not a shim of this shell's.
        python = shutil.which("python3", path=SANDBOX_PATH) or "python3"
        _, big = await call("run_shell", f"head -c {TEN_MIB} /dev/urandom > big.bin")
        bare, sandboxed, with_big = [], [], []
        for _ in range(runs):
            started = time.perf_counter()
            bare_run = await asyncio.create_subprocess_exec(
                python, "-c", "print(1)", stdout=asyncio.subprocess.PIPE
            )
            await bare_run.communicate()
            bare.append((time.perf_counter() - started) * 1000)
            sandboxed.append((await call("run_python", "print(1)"))[0])
            with_big.append((await call("run_python", "print(1)", big))[0])
    bare_ms, sandboxed_ms = statistics.median(bare), statistics.median(sandboxed)
    big_ms = statistics.median(with_big)
    return {
        "bare_ms_median": round(bare_ms, 1),
        "sandboxed_ms_median": round(sandboxed_ms, 1),
        "sandboxed_over_bare": round(sandboxed_ms / bare_ms, 2),
        "ten_mib_call_ms_median": round(big_ms, 1),
        "ten_mib_extra_ms": round(big_ms - sandboxed_ms, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    figures = asyncio.run(measure(options.runs))
    for name in FIGURES:
        print(f"{name:24} {figures[name]}")
    if options.out is not None:
        options.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
