"""The chat page of `examples/chat-web/` as a user serves it: built with `npm run build` from
the packages `npm ci --prefix examples/chat-web` installed (`.ci/run` and the README's test
command run it), then its `dist/` folder served by `python -m http.server`. A test that needs
it fails naming the install command when the packages are missing, rather than skipping, so
that CI cannot pass without them."""

from __future__ import annotations

import asyncio
import fcntl
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import httpx2 as httpx

from tests.support.ports import free_ports
from tests.support.waiting import until

CHAT_WEB: Final = Path(__file__).resolve().parents[2] / "examples" / "chat-web"
DIST: Final = CHAT_WEB / "dist"
INSTALL_COMMAND: Final = "npm ci --prefix examples/chat-web"
SOURCES: Final = ("src", "index.html", "style.css", "build.mjs", "package-lock.json")


def _stale() -> bool:
    """No bundle yet, or a source newer than it (a developer edited the page)."""
    bundle = DIST / "app.js"
    if not bundle.exists() or not (DIST / "index.html").exists():
        return True
    files = [p for name in SOURCES for p in [CHAT_WEB / name, *(CHAT_WEB / name).rglob("*")]]
    built = bundle.stat().st_mtime
    return any(p.is_file() and p.stat().st_mtime > built for p in files)


def built_page() -> Path:
    """`examples/chat-web/dist`, built first with `npm run build` when missing or stale."""
    modules = CHAT_WEB / "node_modules"
    if not (modules / "@ai-sdk" / "react").exists():
        raise RuntimeError(f"{modules} is missing: run `{INSTALL_COMMAND}` first")
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not on PATH: the chat page is built with Node.js 20 or later")
    # One build at a time: the suite's workers may all reach here at once.
    with (modules / ".turnkeeper-build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _stale():
            done = subprocess.run(
                [npm, "run", "build"], cwd=CHAT_WEB, capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 0, f"npm run build failed:\n{done.stdout}\n{done.stderr}"
    return DIST


def _file_server(folder: Path, port: int) -> subprocess.Popen[bytes]:
    """`python -m http.server PORT --bind 127.0.0.1 --directory FOLDER`, started."""
    command = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    return subprocess.Popen(
        [*command, "--directory", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@asynccontextmanager
async def serving_page() -> AsyncIterator[str]:
    """The URL of the built page, served as its README says: `python -m http.server` over
    `dist/`, on a free port of 127.0.0.1."""
    folder = await asyncio.to_thread(built_page)
    [port] = free_ports(1)
    process = _file_server(folder, port)
    url = f"http://127.0.0.1:{port}"

    async def answers() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"python -m http.server exited with {process.returncode}")
        try:
            async with httpx.AsyncClient() as http:
                return (await http.get(url + "/index.html")).status_code == 200
        except httpx.TransportError:
            return False

    try:
        await until(answers, bool, "the page's file server to answer")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
