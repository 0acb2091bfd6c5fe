"""The TypeScript client of `examples/typescript/` (`@temporalio/client` and turnkeeper's
reference, nothing of its Python library), built as its README builds it. `.ci/run` and the
README's test command install its packages with `npm ci --prefix examples/typescript`; a test
that needs it fails naming that command when they are missing, so CI cannot pass without it."""

from __future__ import annotations

import fcntl
import functools
import subprocess
from pathlib import Path

from tests.support.interop import node

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "typescript"
INSTALL_COMMAND = "npm ci --prefix examples/typescript"
CLI = EXAMPLE / "dist" / "cli.js"


@functools.cache
def built_cli() -> list[str]:
    """`node examples/typescript/dist/cli.js`, after `npm run build` when the sources are newer.

    The suite's xdist workers share the folder: the build runs under a lock, and only when
    `dist` is older than a source, so that no worker rewrites a file another one is running.
    """
    if not (EXAMPLE / "node_modules" / "@temporalio" / "client").exists():
        raise RuntimeError(f"examples/typescript has no node_modules: run `{INSTALL_COMMAND}`")
    with (EXAMPLE / "node_modules" / ".turnkeeper-build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _stale():
            built = subprocess.run(
                ["npm", "run", "--silent", "build", "--prefix", str(EXAMPLE)],
                capture_output=True,
                text=True,
                timeout=180,
            )
            if built.returncode != 0:  # tsc prints its type errors on stdout
                raise RuntimeError(f"npm run build failed:\n{built.stdout}{built.stderr}")
    return [node(), str(CLI)]


def _stale() -> bool:
    if not CLI.exists():
        return True
    built = min(path.stat().st_mtime for path in (EXAMPLE / "dist").glob("*.js"))
    sources = [*(EXAMPLE / "src").glob("*.ts"), EXAMPLE / "tsconfig.json"]
    return any(path.stat().st_mtime > built for path in sources)
