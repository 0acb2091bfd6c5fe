"""The dynamic figure of `bench.house`: the project modules whose code runs for one worker-tool
call, recorded by a profiler while a test-kit turn makes the call (`bench/house.py` says what
the window holds)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from types import FrameType
from typing import Any


class CallWindow:
    """The profiler of `tool_call_modules`: records project modules while its window is open."""

    def __init__(self) -> None:
        self.is_open = False
        self.model_activity: str | None = None
        self.modules: set[str] = set()
        self.closed = asyncio.Event()
        self._loop = asyncio.get_running_loop()

    def profile(self, frame: FrameType, event: str, arg: object) -> None:
        if not self.is_open or event != "call":
            return
        name = frame.f_globals.get("__name__")
        if not isinstance(name, str) or name in self.modules:
            return
        if not name.startswith("turnkeeper.") or name.startswith("turnkeeper.testing"):
            return
        if self._in_model_activity():
            return
        self.modules.add(name)

    def _in_model_activity(self) -> bool:
        from temporalio import activity

        return activity.in_activity() and activity.info().activity_type == self.model_activity

    def open(self) -> None:
        """Called by the model as it answers with the tool call, inside the model-call activity
        (`activity.info()` raises elsewhere: the window's end would be unknown)."""
        from temporalio import activity

        self.model_activity = activity.info().activity_type
        self.is_open = True

    def close(self) -> None:
        """Called by the model as the next request, with the tool's result, reaches it."""
        self.is_open = False
        self._loop.call_soon_threadsafe(self.closed.set)


async def tool_call_modules() -> list[str]:
    """The project modules that run for one worker-tool call (see the module's docstring)."""
    import turnkeeper
    from turnkeeper.testing import ScriptedModel, TurnTestEnvironment, call, reply

    @turnkeeper.tool
    async def look_up(key: str) -> str:
        """Look a key up."""
        return f"the value of {key}"

    window = CallWindow()

    def asks_for_the_tool(conversation: object) -> Any:
        window.open()
        return call("look_up", key="colour")

    def answers(conversation: object) -> Any:
        window.close()
        return reply("The colour is blue.")

    model = ScriptedModel([asks_for_the_tool, answers])
    debug = os.environ.get("TEMPORAL_DEBUG")
    os.environ["TEMPORAL_DEBUG"] = "1"
    threading.setprofile(window.profile)
    sys.setprofile(window.profile)
    try:
        async with TurnTestEnvironment(tools=[look_up], model=model) as env:
            handle = await env.start_turn("What colour is it?")
            # The client waits for the result only once the window closed: its polling is not
            # part of the call.
            await asyncio.wait_for(window.closed.wait(), timeout=120)
            await asyncio.wait_for(handle.result(), timeout=120)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        if debug is None:
            os.environ.pop("TEMPORAL_DEBUG", None)
        else:
            os.environ["TEMPORAL_DEBUG"] = debug
    return sorted(window.modules)
