"""Headless Chromium driven by Playwright, for tests that look at a page.

Playwright launches the system's Chromium (`executable_path`), so nothing is downloaded and no
`playwright install` runs: the Node driver that speaks to the browser ships inside the wheel. Only
what the tests need: open a page, read its text (frames included), type and press keys, screenshot.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, async_playwright
from playwright.async_api import Page as PlaywrightPage

CANDIDATES: Final = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# The flags this workplace requires (no sandbox inside containers, no GPU, no QUIC).
FLAGS: Final = ("--no-sandbox", "--disable-gpu", "--disable-quic")
VIEWPORT: Final = {"width": 1600, "height": 1200}
POLL_MS: Final = 500


def find_chromium() -> str | None:
    for name in CANDIDATES:
        if found := shutil.which(name):
            return found
    return None


class Page:
    """One browser tab; the text it reads includes its frames' text (the Web UI renders markdown,
    such as a workflow's current details, in a sandboxed iframe)."""

    def __init__(self, page: PlaywrightPage) -> None:
        self._page = page
        self.console: list[str] = []
        """What the page wrote to its console (a refused script or style is reported there)."""
        page.on("console", lambda message: self.console.append(message.text))
        self.requests: list[str] = []
        """`METHOD URL` of each request the page sent, in order."""
        page.on("request", lambda request: self.requests.append(f"{request.method} {request.url}"))
        self.responses: list[str] = []
        """`STATUS METHOD URL` of each response the page received, in order."""
        page.on(
            "response",
            lambda response: self.responses.append(
                f"{response.status} {response.request.method} {response.url}"
            ),
        )

    async def goto(self, url: str) -> None:
        await self._page.goto(url, wait_until="commit")

    async def reload(self) -> None:
        """Reloads the page as a person would (F5): the tab's sessionStorage is kept."""
        await self._page.reload(wait_until="commit")

    @property
    def url(self) -> str:
        return self._page.url

    async def text(self) -> str:
        return "\n".join([await _frame_text(frame) for frame in self._page.frames])

    async def wait_for_text(self, expected: str, timeout_s: float = 30.0) -> str:
        """Poll the rendered text until it contains `expected`; returns the whole text.

        Polled rather than Playwright's `wait_for`: that waits in one frame, and the text may land
        in any frame of a page whose frames come and go while it renders."""
        for _ in range(int(timeout_s * 1000 / POLL_MS)):
            if expected in (text := await self.text()):
                return text
            await self._page.wait_for_timeout(POLL_MS)
        text = await self.text()
        if expected not in text:
            raise AssertionError(f"{expected!r} never appeared; the page says:\n{text[:3000]}")
        return text

    async def fill(self, selector: str, text: str) -> None:
        """Types `text` into the field `selector` names, as a person would (input events)."""
        await self._page.fill(selector, text)

    async def value(self, selector: str) -> str:
        """The value of the field `selector` names (a textarea's text is not in `text()`)."""
        return await self._page.input_value(selector)

    async def click(self, selector: str) -> None:
        await self._page.click(selector)

    async def press(self, key: str) -> None:
        """Presses `key` (a Playwright key name: `a`, `ArrowDown`, `Escape`) as a person would,
        on whatever has the focus."""
        await self._page.keyboard.press(key)

    async def text_of(self, selector: str) -> str:
        """The rendered text of the first element `selector` names."""
        return await self._page.locator(selector).first.inner_text()

    async def count(self, selector: str) -> int:
        """How many elements `selector` names."""
        return await self._page.locator(selector).count()

    async def screenshot(self, path: Path, selector: str | None = None) -> None:
        """The page's viewport, or only the first element `selector` names."""
        path.parent.mkdir(parents=True, exist_ok=True)
        if selector is None:
            await self._page.screenshot(path=path)
        else:
            await self._page.locator(selector).first.screenshot(path=path)


async def _frame_text(frame: Frame) -> str:
    try:
        return await frame.locator("body").inner_text(timeout=POLL_MS)
    except PlaywrightError:
        return ""  # the frame navigated or went away while the page renders: read it next time


@asynccontextmanager
async def headless_chromium(executable: str) -> AsyncIterator[Page]:
    """Start Chromium with a fresh profile and yield a tab; stop it afterwards."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=executable, headless=True, args=list(FLAGS)
        )
        try:
            page = await browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
            yield Page(page)
        finally:
            await browser.close()
