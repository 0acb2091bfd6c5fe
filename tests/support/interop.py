"""Where the npm packages of `tests/interop/package.json` are: clients and servers nobody here
wrote (the MCP TypeScript SDK, the MCP Inspector CLI, the reference `server-everything`) that
the suite runs turnkeeper against. `.ci/run` and the README's test command install them with
`npm ci --prefix tests/interop`; a test that needs one fails naming that command when it is
missing, rather than skipping, so that CI cannot pass without them."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

INTEROP = Path(__file__).resolve().parents[1] / "interop"
NODE_MODULES = INTEROP / "node_modules"
INSTALL_COMMAND = "npm ci --prefix tests/interop"


def node() -> str:
    """The `node` executable on PATH."""
    found = shutil.which("node")
    if found is None:
        raise RuntimeError("node is not on PATH: the interop tests run Node.js 20 or later")
    return found


def npm_bin(name: str) -> Path:
    """An executable the interop packages install (e.g. `mcp-server-everything`)."""
    path = NODE_MODULES / ".bin" / name
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run `{INSTALL_COMMAND}` first")
    return path


def npm_package(name: str) -> Path:
    """An installed interop package's folder (e.g. `@modelcontextprotocol/sdk`), for a Node
    script of the suite that imports it."""
    path = NODE_MODULES / name
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run `{INSTALL_COMMAND}` first")
    return path


async def node_output(
    *command: str | Path,
    timeout_s: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Runs a Node program to its end (killed after `timeout_s`); its stdout. It must exit 0."""
    process = await asyncio.create_subprocess_exec(
        *map(str, command),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout_s)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, err.decode()[-3000:]
    return out.decode()
