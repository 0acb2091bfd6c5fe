"""The worker's composition root: builds its activities from its settings and names its workflows
and their sandbox. One place that knows every provider, the tool registry and the content store;
`turnkeeper.worker.plugin` puts them into a worker, and the tests wire the same pieces."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxRestrictions

from turnkeeper.activities.a2a.config import A2aConfig, load_a2a_config
from turnkeeper.activities.a2a.unconfigured import NoA2aAgents
from turnkeeper.activities.attachments.store_activity import AttachmentActivities
from turnkeeper.activities.evals.registered import Evaluators
from turnkeeper.activities.evals.score_activity import EvalActivities
from turnkeeper.activities.guardrails.builtin import builtin_guardrails
from turnkeeper.activities.guardrails.check_activity import GuardrailActivities
from turnkeeper.activities.guardrails.guardrails import Guardrail, Guardrails
from turnkeeper.activities.llm.model_call_activity import ModelCallActivities
from turnkeeper.activities.llm.rate_gate import RateGate
from turnkeeper.activities.mcp.config import McpConfig, load_mcp_config
from turnkeeper.activities.mcp.unconfigured import NoMcpServers
from turnkeeper.activities.output.validate_activity import OutputValidationActivities
from turnkeeper.activities.output.validators import OutputValidator, OutputValidators
from turnkeeper.activities.policies.policy_activity import PolicyActivities, PolicyBook
from turnkeeper.activities.providers import endpoints
from turnkeeper.activities.providers.provider import ModelProvider
from turnkeeper.activities.runtime.approval_cache import ApprovalCacheActivities
from turnkeeper.activities.runtime.turn_cancel import cancel_turn
from turnkeeper.activities.runtime.wait_limit import wait_limit
from turnkeeper.activities.sandbox.sandbox_activity import SandboxActivities, sandbox_tools
from turnkeeper.activities.skills.catalog import SkillCatalog
from turnkeeper.activities.skills.describe_activity import SkillActivities
from turnkeeper.activities.skills.skill import Skill
from turnkeeper.activities.skills.skill_tools import skill_tools
from turnkeeper.activities.store.conversation_activity import ConversationActivities
from turnkeeper.activities.store.conversation_store import ConversationStore
from turnkeeper.activities.tools.registry import ToolRegistry, WorkerTool
from turnkeeper.activities.tools.tool_activity import ToolActivities
from turnkeeper.activities.tools.workspace import Workspace, builtin_tools
from turnkeeper.activities.tools.write_preview import WritePreviews
from turnkeeper.contracts import decision_signing
from turnkeeper.payloads.content_store import ContentStore
from turnkeeper.payloads.stores import open_store
from turnkeeper.worker.sandbox_runner import DirectContextSandboxRunner

if TYPE_CHECKING:
    from turnkeeper.activities.a2a.a2a_activity import A2aActivities
    from turnkeeper.activities.mcp.mcp_activity import McpActivities
    from turnkeeper.worker.settings import Settings

# Modules every workflow run shares instead of importing its own copy (see `workflow_runner`).
SANDBOX_PASSTHROUGH: Final = ("turnkeeper", "cryptography", "rfc8785")


def default_providers() -> dict[str, ModelProvider]:
    """The built-in providers and the named endpoints of `TURNKEEPER_PROVIDERS`."""
    return endpoints.default_providers(os.environ)


def build_activities(
    settings: Settings,
    *,
    client: Client | None = None,
    providers: dict[str, ModelProvider] | None = None,
    tools: ToolRegistry | None = None,
    store: ContentStore | None = None,
    output_validators: OutputValidators | None = None,
    skills: SkillCatalog | None = None,
    guardrails: Guardrails | None = None,
    policies: PolicyBook | None = None,
    evaluators: Evaluators | None = None,
) -> list[Callable[..., Any]]:
    store = store or open_store(settings)
    cap = settings.max_tool_result_bytes
    tools = tools or tool_registry(settings)
    conversations = ConversationStore(store)
    gate = RateGate(client, settings.rate_limits)
    # On every worker: a turn with agent.policy on a worker without policy files is checked
    # (every call permitted) instead of waiting for a worker that has some.
    policies = policies or PolicyBook.open(settings.policy_files)
    model_calls = ModelCallActivities(
        providers or default_providers(), conversations, tools, gate, policies
    )
    stored = ConversationActivities(conversations)
    tool_calls = ToolActivities(
        tools, store, max_result_bytes=cap, attachment_limits=settings.attachment_limits
    )
    mcp = _mcp_activities(load_mcp_config(settings.mcp_config, os.environ), store, cap)
    a2a = _a2a_activities(load_a2a_config(settings.a2a_config, os.environ), store, cap)
    # Registered on every worker, with or without validators: a turn naming one this worker
    # lacks then fails with InvalidTurnRequest instead of waiting for a worker that has it.
    validation = OutputValidationActivities(output_validators or OutputValidators())
    # Likewise on every worker: a turn naming a skill this worker lacks is refused, naming it.
    described = SkillActivities(skills or SkillCatalog())
    # Likewise, with the built-in guardrails: a turn naming one this worker lacks is refused.
    guarded = GuardrailActivities(guardrails or worker_guardrails(settings))
    checked = PolicyActivities(policies)
    activities: list[Callable[..., Any]] = [
        model_calls.model_call,
        tool_calls.tool_call,
        validation.validate_output,
        guarded.check_guardrails,
        described.describe_skills,
        checked.check_policy,
        stored.load_conversation,
        stored.store_conversation,
        # On every worker: an approver's `cancel` asks Temporal for the cancellation through it.
        cancel_turn,
        # On every worker: a turn's `wait` asks it how long a wait may last.
        wait_limit,
        WritePreviews(Workspace(settings.workspace)).write_preview,
        AttachmentActivities(
            store, settings.attachment_limits, settings.attachment_url_hosts
        ).store_attachments,
        # On every worker, bubblewrap or not: a call that lands on a worker without it is an
        # error result saying how to install it, not a task no worker takes.
        SandboxActivities(
            settings.sandbox, store, Workspace(settings.workspace), max_result_bytes=cap
        ).sandbox_call,
        *mcp.activities(),
        *a2a.activities(),
        *_eval_activities(evaluators or Evaluators(), conversations),
    ]
    if client is not None:
        cache = ApprovalCacheActivities(client)
        activities += [cache.approval_cache_lookup, cache.approval_cache_remember]
    return activities


def worker_guardrails(settings: Settings, given: Iterable[Guardrail] = ()) -> Guardrails:
    """The worker's guardrails: the built-in `secrets` and `size_cap` (its limit from
    `settings`), then `given`.

    Raises:
        TypeError: Something in `given` is not a `@turnkeeper.guardrail`.
        ValueError: Two guardrails share a name, or one takes a built-in one's.
    """
    return Guardrails(given, builtin=builtin_guardrails(settings.guardrail_max_chars))


def tool_registry(
    settings: Settings, extra: Iterable[WorkerTool] = (), *, builtin: bool = True
) -> ToolRegistry:
    """The worker's tools: the workspace tools (unless `builtin` is False), then `extra`.

    Raises:
        TypeError: Something in `extra` is not a `@turnkeeper.tool`.
        ValueError: Two tools share a name (`ToolRegistry.add` says which).
    """
    extra = list(extra)
    for tool in extra:
        if isinstance(tool, OutputValidator):
            raise TypeError(
                f"{tool.name} is an output validator, not a tool: give it as output_validators=[…]"
            )
        if isinstance(tool, Guardrail):
            raise TypeError(f"{tool.name} is a guardrail, not a tool: give it as guardrails=[…]")
        if not isinstance(tool, WorkerTool):
            # Else a plain function fails deep in the registry, naming an attribute it lacks.
            name = getattr(tool, "__name__", repr(tool))
            raise TypeError(f"{name} is not a turnkeeper tool: decorate it with @turnkeeper.tool")
    # read_file's own cap sits under the result cap, so the model sees read_file's marker
    # (with the file's name and size) rather than the generic one.
    cap = settings.max_tool_result_bytes
    registry = (
        builtin_tools(
            Workspace(settings.workspace),
            max_read_bytes=cap - 200,
            max_write_bytes=settings.max_write_bytes,
            max_image_bytes=settings.attachment_limits.max_bytes,
        )
        if builtin
        else ToolRegistry()
    )
    if builtin and settings.sandbox.bwrap_path() is not None:
        # Without bubblewrap they are not offered: a turn naming them is refused at its first
        # model call with the hint of `offered_tools.py`.
        for tool in sandbox_tools(settings.sandbox):
            registry.add(tool)
    for tool in extra:
        registry.add(tool)
    return registry


def install_skills(
    settings: Settings, skills: Sequence[Skill], registry: ToolRegistry
) -> SkillCatalog:
    """The worker's skills (`settings.skills_dir`, then `skills`), checked against the tools of
    `registry`; when there is at least one, `load_skill` and `read_skill_file` join `registry`.

    Raises:
        SkillsDirError: The skills folder cannot be read.
        TypeError: Something in `skills` is not a `turnkeeper.Skill`.
        ValueError: A skill defined in Python has the name of another skill, or the registry
            already has a tool named `load_skill` or `read_skill_file`.
    """
    catalog = SkillCatalog.load(settings.skills_dir, skills, worker_tools=registry.names())
    if len(catalog):
        # The same cap as read_file's, for the same reason (see `tool_registry`).
        for tool in skill_tools(catalog, max_read_bytes=settings.max_tool_result_bytes - 200):
            registry.add(tool)
    return catalog


def _eval_activities(
    evaluators: Evaluators, conversations: ConversationStore
) -> list[Callable[..., Any]]:
    scoring = EvalActivities(evaluators, conversations)
    return [scoring.check_eval_scorers, scoring.score_eval_case]


def _mcp_activities(
    config: McpConfig, store: ContentStore, max_result_bytes: int
) -> McpActivities | NoMcpServers:
    if not config.servers:
        return NoMcpServers(store)
    # Imported only when servers are configured: the mcp SDK is a large import.
    from turnkeeper.activities.mcp.mcp_activity import McpActivities

    return McpActivities(config, store, max_result_bytes=max_result_bytes)


def _a2a_activities(
    config: A2aConfig, store: ContentStore, max_result_bytes: int
) -> A2aActivities | NoA2aAgents:
    if not config.agents:
        return NoA2aAgents(store)
    # Imported only when agents are configured: the a2a SDK is a large import.
    from turnkeeper.activities.a2a.a2a_activity import A2aActivities

    return A2aActivities(config, store, max_result_bytes=max_result_bytes)


def worker_workflows(*, versioned: bool = False) -> list[type]:
    """Every workflow a turnkeeper worker runs: the turn, the session of many turns, the
    per-agent approval cache, the per-tenant spend ledger and the per-key rate-limit ledger
    (`TURNKEEPER_RATE_LIMITS`).

    A versioned worker (Worker Deployment Versioning) registers the same workflows under the same
    names with their versioning behaviours: turns and sessions PINNED, the approval cache and the
    rate-limit ledger (and the spend ledger) AUTO_UPGRADE.
    """
    from turnkeeper.workflows.agent_turn_workflow import (
        AgentTurnWorkflow,
        PinnedAgentTurnWorkflow,
    )
    from turnkeeper.workflows.approvals.approval_cache_workflow import (
        ApprovalCacheWorkflow,
        UpgradingApprovalCacheWorkflow,
    )
    from turnkeeper.workflows.evals.eval_run_workflow import (
        EvalRunWorkflow,
        PinnedEvalRunWorkflow,
    )
    from turnkeeper.workflows.fleet.rate_limiter_workflow import (
        RateLimiterWorkflow,
        UpgradingRateLimiterWorkflow,
    )
    from turnkeeper.workflows.fleet.tenant_ledger_workflow import (
        TenantLedgerWorkflow,
        UpgradingTenantLedgerWorkflow,
    )
    from turnkeeper.workflows.sessions.agent_session_workflow import (
        AgentSessionWorkflow,
        PinnedAgentSessionWorkflow,
    )

    if versioned:
        return [
            PinnedAgentTurnWorkflow,
            PinnedAgentSessionWorkflow,
            PinnedEvalRunWorkflow,
            UpgradingApprovalCacheWorkflow,
            UpgradingTenantLedgerWorkflow,
            UpgradingRateLimiterWorkflow,
        ]
    return [
        AgentTurnWorkflow,
        AgentSessionWorkflow,
        EvalRunWorkflow,
        ApprovalCacheWorkflow,
        TenantLedgerWorkflow,
        RateLimiterWorkflow,
    ]


def workflow_runner(
    restrictions: SandboxRestrictions = SandboxRestrictions.default,
    runner_class: type[WorkflowRunner] = UnsandboxedWorkflowRunner,
) -> DirectContextSandboxRunner:
    """The sandbox (`restrictions` and `runner_class` as the SDK's own sandbox takes them), with
    our own deterministic modules imported once per worker instead of once per workflow run:
    they hold no state, and re-importing them (and rebuilding their pydantic models) was a fifth
    of a worker's CPU. Replay tests, not the sandbox, guard their determinism. cryptography
    (which verifies signed decisions) is a native extension that must never be loaded twice in
    one process, as a sandbox re-import would, and that cannot be loaded from inside a sandbox
    at all: it is loaded here, before any workflow runs (6 MiB a worker holds whether or not its
    turns sign anything). rfc8785, the canonical JSON that signatures cover, is pure and
    stateless: one copy serves every run."""
    decision_signing.load_cryptography()
    return DirectContextSandboxRunner(
        restrictions=restrictions.with_passthrough_modules(*SANDBOX_PASSTHROUGH),
        runner_class=runner_class,
    )
