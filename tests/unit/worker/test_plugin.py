"""What `TurnkeeperPlugin` does to an application's client, worker and replayer configuration:
its workflows and activities kept and turnkeeper's added, turnkeeper's data converter and
sandbox, and clear errors for what cannot work. A worker is configured here as `Worker` does it
(the client's plugins, then its own), with no server; tests/system runs one for real."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity, workflow
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.common import WorkerDeploymentVersion
from temporalio.converter import DataConverter, PayloadCodec
from temporalio.worker import (
    Replayer,
    UnsandboxedWorkflowRunner,
    WorkerConfig,
    WorkerDeploymentConfig,
    WorkflowRunner,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
from turnkeeper.activities.tools.registry import worker_tool

from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.payload_storage import TurnPayloadConverter, turn_data_converter
from turnkeeper.worker.plugin import TurnkeeperPlugin
from turnkeeper.worker.sandbox_runner import DirectContextSandboxRunner
from turnkeeper.worker.settings import Settings
from turnkeeper.worker.wiring import worker_workflows

TURN_WORKFLOWS = [
    "AgentTurnWorkflow",
    "AgentSessionWorkflow",
    "EvalRunWorkflow",
    "ApprovalCacheWorkflow",
    "TenantLedgerWorkflow",
    "RateLimiterWorkflow",
]


@dataclass
class Invoice:
    number: str
    total_usd: float


@workflow.defn
class InvoiceWorkflow:
    @workflow.run
    async def run(self, invoice: Invoice) -> str:
        return invoice.number


@activity.defn
async def send_invoice(invoice: Invoice) -> None:
    del invoice


class Compressing(PayloadCodec):
    """A codec of the application's own (this one leaves payloads as they are)."""

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return list(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return list(payloads)


@worker_tool
async def lookup_invoice(number: str) -> str:
    """Look up an invoice."""
    return number


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        task_queue="invoices",
        workspace=tmp_path / "workspace",
        data_dir=tmp_path / "data",
        store_dir=tmp_path / "store",
    )


@pytest.fixture
def plugin(settings: Settings) -> TurnkeeperPlugin:
    return TurnkeeperPlugin(tools=[lookup_invoice], settings=settings, keyring=Keyring())


def _client(plugins: Sequence[Any] = (), **options: Any) -> Client:
    # The service client is only stored until a worker polls: none is needed to configure one.
    return Client(service_client=object(), plugins=plugins, **options)  # type: ignore[arg-type]


def _worker(client: Client, plugins: Sequence[Any] = (), **options: Any) -> WorkerConfig:
    """The configuration `Worker(client, …)` would run with: the client's plugins, then its own."""
    defaults: dict[str, Any] = {"workflow_runner": SandboxedWorkflowRunner()}  # as Worker's
    config = WorkerConfig(
        client=client,
        task_queue="invoices",
        workflows=[InvoiceWorkflow],
        activities=[send_invoice],
        plugins=list(plugins),
        interceptors=[],
        **(defaults | options),
    )
    for plugin in [*client.config()["plugins"], *plugins]:
        config = plugin.configure_worker(config)
    return config


def _workflow_names(config: WorkerConfig) -> list[str]:
    return [workflow._Definition.must_from_class(w).name for w in config["workflows"]]


def _activity_names(config: WorkerConfig) -> list[str]:
    return [activity._Definition.must_from_callable(a).name for a in config["activities"]]


def test_a_client_plugin_keeps_the_applications_workflows_and_activities_and_adds_ours(
    plugin: TurnkeeperPlugin,
) -> None:
    config = _worker(_client([plugin]))

    assert _workflow_names(config) == ["InvoiceWorkflow", *TURN_WORKFLOWS]
    names = _activity_names(config)
    assert names[0] == "send_invoice"
    assert {"model_call", "tool_call", "approval_cache_lookup"} <= set(names)


async def test_the_client_speaks_turnkeepers_converter_and_still_reads_the_applications_json(
    plugin: TurnkeeperPlugin,
) -> None:
    client = _client([plugin])
    converter = client.data_converter

    assert converter.payload_converter_class is TurnPayloadConverter
    assert converter.external_storage is not None  # large payloads go to the content store
    [payload] = await converter.encode([Invoice("INV-7", 12.5)])
    assert payload.data == b'{"number":"INV-7","total_usd":12.5}'
    assert await converter.decode([payload], [Invoice]) == [Invoice("INV-7", 12.5)]


def test_a_client_with_a_converter_of_its_own_is_refused(plugin: TurnkeeperPlugin) -> None:
    own = DataConverter(payload_codec=Compressing())
    with pytest.raises(ValueError, match="already has a data converter of its own"):
        _client([plugin], data_converter=own)


def test_a_worker_plugin_needs_a_client_with_turnkeepers_converter(
    plugin: TurnkeeperPlugin, settings: Settings
) -> None:
    with pytest.raises(ValueError, match=r"give the TurnkeeperPlugin to Client.connect"):
        _worker(_client(), [plugin])

    # A client of `turnkeeper.connect()` has it: the worker's plugin alone is enough.
    connected = _client(data_converter=turn_data_converter(plugin.store))
    assert _workflow_names(_worker(connected, [plugin])) == ["InvoiceWorkflow", *TURN_WORKFLOWS]


def test_one_plugin_given_to_client_and_worker_joins_the_worker_once(
    plugin: TurnkeeperPlugin, settings: Settings
) -> None:
    config = _worker(_client([plugin]), [plugin])
    assert _workflow_names(config) == ["InvoiceWorkflow", *TURN_WORKFLOWS]

    other = TurnkeeperPlugin(settings=settings, keyring=Keyring())
    with pytest.raises(ValueError, match="turnkeeper's workflows are already in this worker"):
        _worker(_client([plugin]), [other])


def test_a_non_tool_in_tools_is_named(settings: Settings) -> None:
    def refund(order_id: str) -> str:
        return order_id

    with pytest.raises(TypeError, match="refund is not a turnkeeper tool: decorate it"):
        TurnkeeperPlugin(tools=[lookup_invoice, refund], settings=settings)  # type: ignore[list-item]


def test_a_versioned_worker_gets_the_pinned_workflows(plugin: TurnkeeperPlugin) -> None:
    deployment = WorkerDeploymentConfig(
        version=WorkerDeploymentVersion("invoices", "b1"), use_worker_versioning=True
    )
    config = _worker(_client([plugin]), deployment_config=deployment)

    assert config["workflows"][1:] == worker_workflows(versioned=True)


@pytest.mark.parametrize(
    "theirs",
    [
        SandboxedWorkflowRunner(),
        SandboxedWorkflowRunner(
            restrictions=SandboxRestrictions.default.with_passthrough_modules("invoices")
        ),
    ],
    ids=["default", "their-restrictions"],
)
def test_every_workflow_runs_in_our_sandbox_with_their_restrictions_kept(
    plugin: TurnkeeperPlugin, theirs: SandboxedWorkflowRunner
) -> None:
    config = _worker(_client([plugin]), workflow_runner=theirs)
    runner = config["workflow_runner"]

    assert isinstance(runner, DirectContextSandboxRunner)
    passed = runner.restrictions.passthrough_modules
    assert {"turnkeeper", "cryptography"} <= passed
    assert theirs.restrictions.passthrough_modules <= passed


def test_an_unsandboxed_runner_stays_unsandboxed(plugin: TurnkeeperPlugin) -> None:
    theirs: WorkflowRunner = UnsandboxedWorkflowRunner()
    config = _worker(_client([plugin]), workflow_runner=theirs)

    assert config["workflow_runner"] is theirs


def test_a_replayer_replays_turns_beside_the_applications_workflows(
    plugin: TurnkeeperPlugin,
) -> None:
    replayer = Replayer(workflows=[InvoiceWorkflow], plugins=[plugin])
    config = replayer.config(active_config=True)

    assert config["workflows"][0] is InvoiceWorkflow
    assert list(config["workflows"][1:]) == worker_workflows()
    assert config["data_converter"].payload_converter_class is TurnPayloadConverter
    assert isinstance(config["workflow_runner"], DirectContextSandboxRunner)
