"""Headless Chromium driven over the Chrome DevTools Protocol, for tests that look at a page.

Uses Debian's `chromium` and aiohttp's WebSocket client (already a test dependency): no browser
download, no driver binary. Only what the tests need: open a page, read its text, screenshot.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import aiohttp

CANDIDATES: Final = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# The flags this workplace requires, plus a DevTools port Chromium picks itself.
FLAGS: Final = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1600,1200",
)
START_TIMEOUT_S: Final = 30.0
_INNER_TEXT: Final = "document.body ? document.body.innerText : ''"


def find_chromium() -> str | None:
    for name in CANDIDATES:
        if found := shutil.which(name):
            return found
    return None


class DevToolsError(RuntimeError):
    """Chromium refused a DevTools command."""


class Page:
    """One browser tab, commanded over its DevTools WebSocket."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self._socket = socket
        self._ids = itertools.count(1)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (events in between are skipped)."""
        command_id = next(self._ids)
        await self._socket.send_json({"id": command_id, "method": method, "params": params})
        while True:
            message = await self._socket.receive_json(timeout=START_TIMEOUT_S)
            if message.get("id") != command_id:
                continue
            if "error" in message:
                raise DevToolsError(f"{method} failed: {message['error']}")
            return dict(message.get("result", {}))

    async def goto(self, url: str) -> None:
        await self.send("Page.enable")
        await self.send("Page.navigate", url=url)

    async def text(self) -> str:
        """The rendered text of the page and of its frames (the Web UI renders markdown, such
        as a workflow's current details, in a sandboxed iframe that the page's own script cannot
        read)."""
        tree = (await self.send("Page.getFrameTree"))["frameTree"]
        return "\n".join([await self._frame_text(frame_id) for frame_id in _frame_ids(tree)])

    async def _frame_text(self, frame_id: str) -> str:
        try:
            world = await self.send("Page.createIsolatedWorld", frameId=frame_id)
            result = await self.send(
                "Runtime.evaluate",
                expression=_INNER_TEXT,
                contextId=world["executionContextId"],
                returnByValue=True,
            )
        except DevToolsError:
            return ""  # the frame navigated or went away while the page renders: read it next time
        return str(result.get("result", {}).get("value", ""))

    async def wait_for_text(self, expected: str, timeout_s: float = 30.0) -> str:
        """Poll the rendered text until it contains `expected`; returns the whole text."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            text = await self.text()
            if expected in text:
                return text
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"{expected!r} never appeared; the page says:\n{text[:3000]}")
            await asyncio.sleep(0.5)

    async def screenshot(self, path: Path) -> None:
        result = await self.send("Page.captureScreenshot", format="png")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(result["data"]))


@asynccontextmanager
async def headless_chromium(executable: str) -> AsyncIterator[Page]:
    """Start Chromium with a fresh profile and yield its first tab; stop it afterwards."""
    # Chromium's helper processes may still write to the profile for a moment after it exits.
    with tempfile.TemporaryDirectory(
        prefix="chromium-profile-", ignore_cleanup_errors=True
    ) as profile:
        process = await asyncio.create_subprocess_exec(
            executable,
            *FLAGS,
            f"--user-data-dir={profile}",
            "about:blank",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            port = await _devtools_port(Path(profile), process)
            async with aiohttp.ClientSession() as session:
                url = await _page_socket_url(session, port)
                async with session.ws_connect(url, max_msg_size=0) as socket:
                    yield Page(socket)
        finally:
            if process.returncode is None:
                process.terminate()
                await asyncio.wait_for(process.wait(), timeout=10)


def _frame_ids(tree: dict[str, Any]) -> list[str]:
    ids = [str(tree["frame"]["id"])]
    for child in tree.get("childFrames", []):
        ids.extend(_frame_ids(child))
    return ids


async def _devtools_port(profile: Path, process: asyncio.subprocess.Process) -> int:
    """Chromium writes the port it chose into `DevToolsActivePort` in the profile."""
    marker = profile / "DevToolsActivePort"
    for _ in range(int(START_TIMEOUT_S / 0.1)):
        if process.returncode is not None:
            raise RuntimeError(f"chromium exited with status {process.returncode}")
        if marker.exists() and (lines := marker.read_text().splitlines()):
            return int(lines[0])
        await asyncio.sleep(0.1)
    raise RuntimeError("chromium did not open its DevTools port")


async def _page_socket_url(session: aiohttp.ClientSession, port: int) -> str:
    async with session.get(f"http://127.0.0.1:{port}/json/list") as response:
        targets = await response.json()
    return str(next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page"))
