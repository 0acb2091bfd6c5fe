"""What crosses the `check_policy` activity: one tool call as the Cedar request describes it,
and what the worker's policies decide for it (contracts/policies.py has the agent's switch and
the recorded decision)."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from pydantic import Field, JsonValue
from turnkeeper.contracts.activity_io import CompactModel
from turnkeeper.contracts.policies import PolicyEffect

# Never rename: histories of turns with `agent.policy` name it.
ACTIVITY_CHECK_POLICY: Final = "check_policy"


class PolicyCheckInput(CompactModel):
    """The `check_policy` activity's input: one tool call as the Cedar request describes it."""

    agent_id: str
    """The principal, `Agent::"<agent id>"`."""
    tenant: str = ""
    """The request's `tenant` (empty: none), the principal's `tenant` attribute."""
    started_by: str = ""
    """Whom the turn belongs to (empty: unknown), the principal's `started_by` attribute."""
    approvers: list[str] = Field(default_factory=list)
    """`agent.approvers`' names, the principal's `approvers` attribute."""
    tool: str
    """The resource, `Tool::"<tool>"`."""
    input: dict[str, JsonValue] = Field(default_factory=dict)
    """The call's arguments: `context.input`."""
    cost_usd: float = 0.0
    """What the turn has cost so far: `context.cost_usd` (a Cedar `decimal`)."""
    iteration: int = 0
    """The turn's iteration: `context.iteration`."""
    depth: int = 0
    """Levels below the root turn (0: a root turn): `context.depth`."""
    time: datetime
    """Workflow time of the call: `context.time` (a Cedar `datetime`), with `context.hour` and
    `context.weekday` (0 is Monday) in UTC."""


class PolicyCheckResult(CompactModel):
    """The `check_policy` activity's result."""

    effect: PolicyEffect
    """What the worker's policies decide for the call."""
    policies: list[str] = Field(default_factory=list)
    """The deciding policies, by `@id` (or Cedar's `policyN` where a policy has none)."""
    policy_hash: str = ""
    """The SHA-256 of the policy set that decided (empty: the worker has no policy files)."""
