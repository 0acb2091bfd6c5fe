"""Standing approvals: a human's `remember: true` on an approval, kept per agent so later turns
run that tool without asking. They live in one `ApprovalCacheWorkflow` per agent (workflow id
`approval-cache-<agent id>`), readable and revocable with nothing but the `temporal` CLI:

    temporal workflow query  --workflow-id approval-cache-research-assistant --name standing
    temporal workflow signal --workflow-id approval-cache-research-assistant --name revoke \\
        --input '{"tool": "write_file", "by": "alice"}'
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from pydantic import ConfigDict, Field, JsonValue
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.decision_signing import (
    LEGACY_SIGNING_VERSION,
    Signature,
    decision_fields,
)
from turnkeeper.contracts.signals import ApproveInput, SignedCall
from turnkeeper.contracts.turn import TOOL_NAME_PATTERN

APPROVAL_CACHE_WORKFLOW: Final = "ApprovalCacheWorkflow"
SIGNAL_REMEMBER: Final = "remember"
SIGNAL_REVOKE: Final = "revoke"
QUERY_STANDING: Final = "standing"
UPDATE_LOOKUP: Final = "lookup"
ACTIVITY_APPROVAL_CACHE_LOOKUP: Final = "approval_cache_lookup"
ACTIVITY_APPROVAL_CACHE_REMEMBER: Final = "approval_cache_remember"
# Raised (non-retryable) by `approval_cache_remember` for a tool name no tool can have.
INVALID_STANDING_APPROVAL: Final = "InvalidStandingApproval"

APPROVAL_CACHE_ID_PREFIX: Final = "approval-cache-"
# A run continues as new after this many history events (or sooner, when Temporal suggests it).
DEFAULT_MAX_HISTORY_EVENTS: Final = 10_000
MAX_LOOKUP_TOOLS: Final = 256


def approval_cache_id(agent_id: str) -> str:
    """The workflow id of `agent_id`'s approval cache."""
    return APPROVAL_CACHE_ID_PREFIX + agent_id


class SignedGrant(ContractModel):
    """The signed decision a standing approval was granted with. Anyone may signal the cache, so
    a turn whose approvers have keys trusts a standing approval only when this re-verifies
    against one of its own keys."""

    model_config = ConfigDict(extra="forbid")
    workflow_id: str
    """The turn the decision was made in."""
    agent_id: str
    """The turn's agent."""
    call_id: str
    """The call decided."""
    tool: str
    """The decided call's tool."""
    approved: bool
    """The decision's verdict."""
    input: dict[str, JsonValue] | None = None
    """The decision's edited arguments, if any."""
    reason: str = ""
    """The decision's reason."""
    remember: bool
    """The decision's `remember` (true: it asked for this standing approval)."""
    approver: str
    """Who decided."""
    signature: Signature
    """The decision's signature, re-verified by every turn that relies on it."""
    call_input_sha256: str | None = None
    """Signing format 2 only: the SHA-256 of the canonical JSON of the call's original input,
    as signed."""
    signing_version: int = LEGACY_SIGNING_VERSION
    """The format the grant was signed in. Grants stored before format 2 carry none, and stay
    valid: they verify in format 1."""
    first_run_id: str | None = None
    """Signing format 3 only: the first run id of the turn the decision was made in, as
    signed."""

    @classmethod
    def of(cls, decision: ApproveInput, call: SignedCall, version: int) -> SignedGrant | None:
        """The grant of a decision on `call` signed in format `version`; None if unsigned."""
        if decision.signature is None:
            return None
        fields = decision.signed_fields(call, version)
        return cls.model_validate(
            {**fields, "signature": decision.signature, "signing_version": version}
        )

    def signed_fields(self) -> dict[str, JsonValue]:
        """The fields its signature covers, exactly as the decision had them."""
        return decision_fields(
            workflow_id=self.workflow_id,
            agent_id=self.agent_id,
            call_id=self.call_id,
            tool=self.tool,
            approved=self.approved,
            input=self.input,
            reason=self.reason,
            remember=self.remember,
            approver=self.approver,
            call_input_sha256=self.call_input_sha256,
            version=self.signing_version,
            first_run_id=self.first_run_id,
        )


class StandingApproval(ContractModel):
    """A tool that `agent_id`'s turns may run without asking, and who allowed it."""

    tool: str
    """The tool allowed."""
    approver: str = ""
    """Who allowed it."""
    reason: str = ""
    """Why."""
    at: datetime
    """When."""
    grant: SignedGrant | None = None
    """When it came from a signed decision: that decision."""


class RememberInput(ContractModel):
    """The payload of the `remember` signal. Without `at`, the cache records when it got it."""

    model_config = ConfigDict(extra="forbid")
    tool: str = Field(pattern=TOOL_NAME_PATTERN)
    """The tool to allow."""
    approver: str = ""
    """Who allowed it."""
    reason: str = ""
    """Why."""
    at: datetime | None = None
    """When; the cache's clock when left out."""
    grant: SignedGrant | None = None
    """The signed decision it came from."""


class RevokeInput(ContractModel):
    """The payload of the `revoke` signal."""

    model_config = ConfigDict(extra="forbid")
    tool: str = Field(min_length=1)
    """The tool whose standing approval ends."""
    by: str = ""
    """Who revoked it."""


class LookupInput(ContractModel):
    """The argument of the `lookup` update: the tools a turn is about to call."""

    model_config = ConfigDict(extra="forbid")
    tools: list[str] = Field(max_length=MAX_LOOKUP_TOOLS)
    """The tools asked about."""


class LookupResult(ContractModel):
    """The tools among those asked for that have a standing approval, in the order asked."""

    approved: list[str] = Field(default_factory=list)
    """The tools with a standing approval, in the order asked."""
    standing: list[StandingApproval] = Field(default_factory=list)
    """The same approvals in full, with their grants, for turns that must re-verify them."""


class ApprovalCacheInput(ContractModel):
    """The workflow's argument; a continued run receives the standing approvals it carries."""

    agent_id: str = Field(min_length=1)
    """The agent whose standing approvals the cache keeps."""
    standing: list[StandingApproval] = Field(default_factory=list)
    """The standing approvals, carried across continue-as-new."""
    max_history_events: int = Field(default=DEFAULT_MAX_HISTORY_EVENTS, ge=1)
    """Continue as new after this many history events (or sooner, when Temporal suggests
    it)."""


class ApprovalCacheLookupInput(ContractModel):
    """The `approval_cache_lookup` activity's input."""

    agent_id: str
    """The agent whose cache is asked."""
    tools: list[str] = Field(max_length=MAX_LOOKUP_TOOLS)
    """The tools a turn is about to call."""


class ApprovalCacheRememberInput(ContractModel):
    """The `approval_cache_remember` activity's input."""

    agent_id: str
    """The agent whose cache records it."""
    tool: str
    """The tool to allow."""
    approver: str = ""
    """Who allowed it."""
    reason: str = ""
    """Why."""
    at: datetime | None = None
    """The decision's time; the cache's clock when absent."""
    grant: SignedGrant | None = None
    """The signed decision it came from."""
