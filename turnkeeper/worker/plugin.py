"""`TurnkeeperPlugin`: turnkeeper inside an application's own Temporal client and worker.

A Temporal plugin (`temporalio.plugin.SimplePlugin`) is the SDK's one composition point: given to
`Client.connect(plugins=[…])` it sets the client's data converter and joins every `Worker` built
on that client; given to `Worker(plugins=[…])` it joins that worker only. It adds, never
replaces: the application's workflows and activities stay registered beside turnkeeper's, and
its workflows run in the same sandbox, which only lets turnkeeper's own modules through.
`run_worker` and `python worker.py` build their worker with it too.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import DataConverter, DefaultFailureConverter, DefaultPayloadConverter
from temporalio.plugin import SimplePlugin
from temporalio.worker import ReplayerConfig, WorkerConfig, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from turnkeeper.activities.a2a.config import load_a2a_config
from turnkeeper.activities.evals.registered import Evaluators, RegisteredEvaluator
from turnkeeper.activities.guardrails.guardrails import Guardrail
from turnkeeper.activities.mcp.config import load_mcp_config
from turnkeeper.activities.output.validators import OutputValidator, OutputValidators
from turnkeeper.activities.policies.policy_activity import PolicyBook
from turnkeeper.activities.policies.policy_set import PolicyFileError
from turnkeeper.activities.providers.cassette_file import CassetteFormatError
from turnkeeper.activities.providers.cassette_provider import with_cassette
from turnkeeper.activities.providers.provider import ModelProvider
from turnkeeper.activities.skills.skill import Skill
from turnkeeper.activities.skills.skill_file import SkillsDirError
from turnkeeper.activities.tools.registry import WorkerTool
from turnkeeper.client.settings_error import SettingsError
from turnkeeper.contracts import decision_signing
from turnkeeper.contracts.policies import POLICY_FILE_ENV
from turnkeeper.payloads.content_store import ContentStore
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.payload_storage import TurnPayloadConverter, turn_data_converter
from turnkeeper.payloads.stores import open_store
from turnkeeper.worker.required_encryption import check_required_encryption
from turnkeeper.worker.settings import WORKSPACE_ENV, Settings
from turnkeeper.worker.wiring import (
    SANDBOX_PASSTHROUGH,
    build_activities,
    default_providers,
    install_skills,
    tool_registry,
    worker_guardrails,
    worker_workflows,
    workflow_runner,
)

PLUGIN_NAME: Final = "turnkeeper.TurnkeeperPlugin"

# Converters an application may have before adding turnkeeper (the SDK's default, pydantic's):
# they read and write plain JSON as ours does, so ours keeps the application's payloads readable.
_PLAIN_JSON: Final = (DefaultPayloadConverter, PydanticPayloadConverter)


class TurnkeeperPlugin(SimplePlugin):
    """turnkeeper's workflows, activities, data converter and sandbox for your own Temporal
    client and worker, beside your own workflows and activities.

        plugin = turnkeeper.TurnkeeperPlugin(tools=[refund])
        client = await Client.connect("localhost:7233", plugins=[plugin])
        worker = Worker(client, task_queue="agent-turns", workflows=[YourWorkflow],
                        activities=[your_activity])  # runs turns too: the client brought it

    Given to `Client.connect`, it gives the client turnkeeper's data converter (pydantic JSON,
    the content store, `TURNKEEPER_ENCRYPTION_KEYS`) and joins every worker on that client. Given
    to `Worker(plugins=[…])` instead, the client must already speak turnkeeper's converter
    (`turnkeeper.connect()`). A worker gets turnkeeper's three workflows (their pinned variants
    under a `deployment_config` with versioning) and its activities, and runs every workflow,
    yours included, in the SDK's sandbox with turnkeeper's modules passed through. A `Replayer`
    given the plugin replays turns.

    Settings not given here come from the same variables as `python worker.py`
    (`AGENT_WORKSPACE`, `TURNKEEPER_*`); the task queue, pollers and versioning are the
    `Worker`'s own arguments.

    Args:
        tools: Functions decorated with `@turnkeeper.tool`; an agent offers them by name.
        builtin_tools: Also offer the workspace tools (`list_files`, `read_file`,
            `search_files`, `write_file`).
        mcp_config: A JSON file of MCP servers (default: `TURNKEEPER_MCP_CONFIG`).
        output_validators: Functions decorated with `@turnkeeper.output_validator`; an agent
            names those that check its final answer (`agent.output_validators`).
        evaluators: Functions decorated with `@turnkeeper.evaluator`; an evaluation dataset
            names those that score its cases (`turnkeeper eval`).
        skills: `turnkeeper.Skill`s defined in code, beside those of `TURNKEEPER_SKILLS_DIR`;
            an agent names those it may load (`agent.skills`).
        guardrails: Functions decorated with `@turnkeeper.guardrail`, beside the built-in
            `secrets` and `size_cap`; an agent names those that check its texts
            (`agent.guardrails`).
        providers: Model providers by the prefix of `agent.model` (default: `anthropic`,
            `openai`, `demo` and the endpoints of `TURNKEEPER_PROVIDERS`).
        settings: The worker's settings (default: read from the environment).
        store: The content store (default: the one the settings name); every client and worker
            of a turn must use the same one. Whoever opened it closes it.
        keyring: The encryption keys (default: `TURNKEEPER_ENCRYPTION_KEYS`).

    Attributes:
        settings: The settings the plugin's activities run with.
        store: The content store of its data converter and activities.

    Raises:
        TypeError: Something in `tools` is not a `@turnkeeper.tool`, in `output_validators`
            not a `@turnkeeper.output_validator`, or in `skills` not a `turnkeeper.Skill`.
        ValueError: Two tools (or two output validators, or two skills) share a name, or the MCP
            config or `TURNKEEPER_PROVIDERS` cannot be used (the message names the file or entry
            and the field).
        SettingsError: A variable cannot be used, the workspace cannot be created, or the
            skills folder cannot be read.
        EncryptionKeyError: The keys are malformed, or encryption is required without them.
    """

    def __init__(
        self,
        tools: Sequence[WorkerTool] = (),
        *,
        builtin_tools: bool = True,
        mcp_config: str | Path | None = None,
        output_validators: Sequence[OutputValidator] = (),
        evaluators: Sequence[RegisteredEvaluator] = (),
        skills: Sequence[Skill] = (),
        guardrails: Sequence[Guardrail] = (),
        providers: Mapping[str, ModelProvider] | None = None,
        settings: Settings | None = None,
        store: ContentStore | None = None,
        keyring: Keyring | None = None,
    ) -> None:
        settings = settings or Settings.from_env()
        if mcp_config:
            settings = dataclasses.replace(settings, mcp_config=Path(mcp_config).resolve())
        keyring = Keyring.from_env() if keyring is None else keyring
        # A configuration that cannot work fails here, in one line, before anything connects.
        check_required_encryption(settings, keyring)
        load_mcp_config(settings.mcp_config, os.environ)
        load_a2a_config(settings.a2a_config, os.environ)
        self._providers = _with_cassette(
            dict(providers) if providers is not None else default_providers(), settings
        )
        self._validators = OutputValidators(output_validators)
        self._guardrails = worker_guardrails(settings, guardrails)
        self._evaluators = Evaluators(evaluators)
        try:
            self._tools = tool_registry(settings, tools, builtin=builtin_tools)
        except OSError as err:
            # The workspace folder is the one thing building the tools writes.
            raise SettingsError(
                f"{WORKSPACE_ENV}: the workspace {settings.workspace} cannot be created: "
                f"{err.strerror or err}"
            ) from None
        try:
            # After the tools: a skill may bring only tools this worker has.
            self._skills = install_skills(settings, skills, self._tools)
        except SkillsDirError as err:
            raise SettingsError(str(err)) from None
        try:
            self._policies = PolicyBook.open(settings.policy_files)
        except PolicyFileError as err:
            raise SettingsError(f"{POLICY_FILE_ENV}: {err}") from None
        self.settings = settings
        self.store = store or open_store(settings, keyring)
        self._converter = turn_data_converter(
            self.store, keyring, require_encryption=settings.require_encryption
        )
        super().__init__(
            PLUGIN_NAME, data_converter=self._take_converter, workflow_runner=_sandbox_for
        )

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        """Adds turnkeeper's workflows and activities to the worker's own and sets its sandbox.

        Raises:
            ValueError: The worker's client does not use turnkeeper's data converter, or another
                TurnkeeperPlugin already joined this worker.
        """
        client = config["client"]  # type: ignore[typeddict-item]
        workflows = list(config.get("workflows") or ())
        if _has_turnkeeper(workflows):
            if self._given_to_client_and_worker(config):
                return config  # the SDK warned; this instance already joined the worker
            raise ValueError(
                "turnkeeper's workflows are already in this worker (another TurnkeeperPlugin, or "
                "listed in workflows=): a plugin given to Client.connect joins every Worker of "
                "that client; give one TurnkeeperPlugin to the client or to the worker, not both"
            )
        if client.data_converter.payload_converter_class is not TurnPayloadConverter:
            raise ValueError(
                "this worker's client does not use turnkeeper's data converter: give the "
                "TurnkeeperPlugin to Client.connect(plugins=[…]), or connect with "
                "turnkeeper.connect()"
            )
        config = super().configure_worker(config)
        deployment = config.get("deployment_config")
        versioned = deployment is not None and deployment.use_worker_versioning
        config["workflows"] = [*workflows, *worker_workflows(versioned=versioned)]
        config["activities"] = [
            *(config.get("activities") or ()),
            *build_activities(
                self.settings,
                client=client,
                providers=self._providers,
                tools=self._tools,
                store=self.store,
                output_validators=self._validators,
                skills=self._skills,
                guardrails=self._guardrails,
                policies=self._policies,
                evaluators=self._evaluators,
            ),
        ]
        return config

    def configure_replayer(self, config: ReplayerConfig) -> ReplayerConfig:
        """Adds turnkeeper's workflows to the replayer's own, with its converter and sandbox."""
        config = super().configure_replayer(config)
        workflows = list(config.get("workflows") or ())
        if not _has_turnkeeper(workflows):
            config["workflows"] = [*workflows, *worker_workflows()]
        return config

    def _take_converter(self, existing: DataConverter | None) -> DataConverter:
        if existing is not None and not _replaceable(existing):
            raise ValueError(
                "the client already has a data converter of its own: TurnkeeperPlugin brings "
                "turnkeeper's (pydantic JSON, content store, encryption), which also reads and "
                "writes your workflows' JSON; connect without data_converter="
            )
        return self._converter

    def _given_to_client_and_worker(self, config: WorkerConfig) -> bool:
        client_plugins = config["client"].config()["plugins"]  # type: ignore[typeddict-item]
        worker_plugins = config.get("plugins") or ()
        return any(p is self for p in client_plugins) and any(p is self for p in worker_plugins)


def _with_cassette(
    providers: dict[str, ModelProvider], settings: Settings
) -> dict[str, ModelProvider]:
    """`providers` behind the worker's cassette, if it has one; a file that is not a cassette
    stops the worker here, at start, rather than failing its first turn."""
    try:
        return with_cassette(providers, settings.cassette)
    except CassetteFormatError as err:
        raise SettingsError(f"TURNKEEPER_CASSETTE: {err}") from None


def _replaceable(converter: DataConverter) -> bool:
    if converter.payload_converter_class is TurnPayloadConverter:
        return True
    return (
        converter.payload_converter_class in _PLAIN_JSON
        and converter.payload_codec is None
        and converter.external_storage is None
        and converter.failure_converter_class is DefaultFailureConverter
    )


def _has_turnkeeper(workflows: Sequence[type]) -> bool:
    ours = {*worker_workflows(), *worker_workflows(versioned=True)}
    return any(workflow in ours for workflow in workflows)


def _sandbox_for(runner: WorkflowRunner | None) -> WorkflowRunner:
    """The worker's runner with turnkeeper's modules passed through its sandbox.

    The SDK's default sandbox (or one the application configured) becomes ours, with the
    application's restrictions kept; a sandbox class of the application's own keeps its class.
    An unsandboxed runner stays as it is: there every module is imported once anyway.
    """
    if runner is None or type(runner) is SandboxedWorkflowRunner:
        base = runner or SandboxedWorkflowRunner()
        return workflow_runner(base.restrictions, base.runner_class)
    if isinstance(runner, SandboxedWorkflowRunner):
        decision_signing.load_cryptography()  # see `workflow_runner`
        restrictions = runner.restrictions.with_passthrough_modules(*SANDBOX_PASSTHROUGH)
        return dataclasses.replace(runner, restrictions=restrictions)
    return runner
