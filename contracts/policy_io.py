"""What crosses to the worker's policies: who calls and where the turn stands
(`PolicyCaller`, sent with each model call of an agent with `agent.policy`, so the worker checks
the calls of the answer as soon as it has it), one tool call as the Cedar request describes it
(`PolicyCheckInput`, the `check_policy` activity's input, for a call an approver edited), and
what the policies decide (`PolicyCheckResult`). contracts/policies.py has the agent's switch and
the decision the turn records.

Plain contract models, not `CompactModel`s: `activity_io` carries them and this module must not
import it back."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from pydantic import Field, JsonValue
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.policies import PolicyEffect

# Never rename: histories of turns with `agent.policy` name it.
ACTIVITY_CHECK_POLICY: Final = "check_policy"


class PolicyCaller(ContractModel):
    """The principal and the turn so far: what the Cedar requests of one answer's calls share."""

    agent_id: str
    """The principal, `Agent::"<agent id>"`."""
    tenant: str = ""
    """The request's `tenant` (empty: none), the principal's `tenant` attribute."""
    started_by: str = ""
    """Whom the turn belongs to (empty: unknown), the principal's `started_by` attribute."""
    approvers: list[str] = Field(default_factory=list)
    """`agent.approvers`' names, the principal's `approvers` attribute."""
    cost_usd: float = 0.0
    """What the turn has cost so far: `context.cost_usd` (a Cedar `decimal`). Sent with a model
    call, the worker adds that call's own cost."""
    iteration: int = 0
    """The turn's iteration: `context.iteration`."""
    depth: int = 0
    """Levels below the root turn (0: a root turn): `context.depth`."""


class PolicyCheckInput(ContractModel):
    """One tool call as the Cedar request describes it; the `check_policy` activity's input."""

    caller: PolicyCaller
    """The principal and the turn so far."""
    tool: str
    """The resource, `Tool::"<tool>"`."""
    input: dict[str, JsonValue] = Field(default_factory=dict)
    """The call's arguments: `context.input`."""
    time: datetime
    """When the call was checked: `context.time` (a Cedar `datetime`), with `context.hour` and
    `context.weekday` (0 is Monday) in UTC."""


class PolicyCheckResult(ContractModel):
    """What the worker's policies decide for one call."""

    call_id: str = ""
    """The call decided (set in a model call's `policy_rulings`)."""
    effect: PolicyEffect
    """`permit`, `ask` or `forbid`."""
    policies: list[str] = Field(default_factory=list)
    """The deciding policies, by `@id` (or Cedar's `policyN` where a policy has none)."""
    policy_hash: str = ""
    """The SHA-256 of the policy set that decided (empty: the worker has no policy files)."""
