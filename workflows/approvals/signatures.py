"""Signed decisions inside the turn: which decisions and standing approvals a turn whose
approvers have public keys may apply. Keys come only from the request, the clock is the
workflow's and the signing format is fixed when the run begins, so every check replays
identically."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic import JsonValue
    from turnkeeper.contracts import decision_signing
    from turnkeeper.contracts.approvals import StandingApproval
    from turnkeeper.contracts.budget_extension import ExtendBudgetInput
    from turnkeeper.contracts.decision_signing import (
        BUDGET_EXTENSION,
        CANONICAL_SIGNING_VERSION,
        DECISION,
        LEGACY_SIGNING_VERSION,
        SIGNING_VERSION,
        Signature,
    )
    from turnkeeper.contracts.signals import ALL_PENDING, ApproveInput, SignedCall
    from turnkeeper.contracts.turn import AgentSpec

# Runs that begin with it verify signing format 2 (RFC 8785 canonical JSON, the call's input
# bound, canonical base64 only, a '*' spent by what was signed). A run whose history began
# without it verifies format 1 to its end, so that its replay takes the path it took.
SIGNING_PATCH = "signed-decisions-v2"
# Runs that begin with it verify signing format 3 (format 2 bound to the turn's first run id);
# a run whose history began without it keeps the format it took, by SIGNING_PATCH.
RUN_BOUND_PATCH = "signed-decisions-v3"


def signing_version(agent: AgentSpec) -> int:
    """The signing format this run of a turn of `agent` verifies; asked once, as it begins. Only
    a turn with keyed approvers verifies anything, so only its history gets a patch marker: the
    newest patch is asked first, so a new history records that one alone."""
    if not agent.approver_keys() or workflow.patched(RUN_BOUND_PATCH):
        return SIGNING_VERSION
    if workflow.patched(SIGNING_PATCH):
        return CANONICAL_SIGNING_VERSION
    return LEGACY_SIGNING_VERSION


def signed_run_id(version: int) -> str | None:
    """The first run id that signatures verified in format `version` bind: this turn's, the same
    in every run after continue-as-new; None for the formats that bind none."""
    if version < SIGNING_VERSION:
        return None
    return workflow.info().first_execution_run_id


def decision_problem(
    agent: AgentSpec,
    decision: ApproveInput,
    call: SignedCall,
    now: datetime,
    spent: Collection[str],
    version: int,
) -> str | None:
    """Why a turn of `agent` must not apply `decision` on `call`, as far as signatures go, or
    None. A turn whose approvers have no keys ignores signatures. `spent` holds the `spent_key`s
    of the '*' decisions it applied: a call is decided once, but '*' matches whatever waits, so
    without this a copy of an earlier '*' would decide calls its approver never saw."""
    keys = agent.approver_keys()
    if not keys:
        return None
    key, problem = _signer(
        keys, decision.approver, decision.signature, "decision", "approve|reject"
    )
    if key is None or decision.signature is None:
        return problem
    try:
        fields = decision.signed_fields(call, version)
    except ValueError as err:
        return f"the call's input cannot be signed, so no decision on it verifies: {err}"
    problem = _signature_problem(fields, decision.signature, key, now, DECISION, version)
    if problem:
        return f"{decision.approver}'s {problem}"
    if decision.call_id == ALL_PENDING and spent_key(decision, call, version) in spent:
        return (
            f"{decision.approver}'s signature of '*' was used already; a '*' decides the calls "
            "waiting when it is signed, so sign a new one for the calls waiting now"
        )
    return None


def spent_key(decision: ApproveInput, call: SignedCall, version: int) -> str:
    """What names an applied signed '*' in the turn's spent set: from format 2 on the digest of
    the bytes its approver signed, which no other spelling of its signature changes; format 1
    kept the signature's text, which one flipped padding bit changed."""
    signature = decision.signature
    if signature is None:
        raise ValueError("an unsigned decision is never spent")
    if version == LEGACY_SIGNING_VERSION:
        return signature.value
    fields = decision.signed_fields(call, version)
    return decision_signing.signed_digest(DECISION, fields, signature.expires_at, version)


def extension_problem(
    agent: AgentSpec,
    extension: ExtendBudgetInput,
    workflow_id: str,
    request: int,
    now: datetime,
    version: int,
    first_run_id: str | None = None,
) -> str | None:
    """Why a turn of `agent` must not apply `extension` to its budget request number
    `request`, as far as signatures go, or None; the same rules as for decisions, under the
    budget extension's own signing kind."""
    keys = agent.approver_keys()
    if not keys:
        return None
    approver, signature = extension.approver, extension.signature
    key, problem = _signer(keys, approver, signature, "budget extension", "extend")
    if key is None or signature is None:
        return problem
    fields = extension.signed_fields(workflow_id, agent.id, request, first_run_id)
    problem = _signature_problem(fields, signature, key, now, BUDGET_EXTENSION, version)
    return f"{approver}'s {problem}" if problem else None


def intervention_problem(
    agent: AgentSpec,
    kind: str,
    author: str,
    signature: Signature | None,
    fields: Mapping[str, JsonValue],
    now: datetime,
    version: int,
) -> str | None:
    """Why a turn of `agent` must not apply a steer, interrupt or cancel (`kind`, its signing
    kind) of `author` whose signed fields are `fields`, as far as signatures go, or None; the
    same rules as for decisions, under the intervention's own signing kind."""
    keys = agent.approver_keys()
    if not keys:
        return None
    key, problem = _signer(keys, author, signature, kind, kind)
    if key is None or signature is None:
        return problem
    problem = _signature_problem(fields, signature, key, now, kind, version)
    return f"{author}'s {problem}" if problem else None


def standing_problem(agent: AgentSpec, approval: StandingApproval) -> str | None:
    """Why a turn of `agent` must ask a human despite `approval`, or None. Anyone may signal the
    approval cache, so a keyed turn trusts only a grant its own keys verify. Expiry is not
    checked again: the turn that granted it checked it when the decision was taken. A grant is
    verified in the format it was signed in: one stored before format 2 stays valid, since a
    grant names no call to be replayed onto, only the tool its approver chose to remember."""
    keys = agent.approver_keys()
    if not keys:
        return None
    grant = approval.grant
    if grant is None:
        return "it was not granted by a signed decision"
    if not (grant.approved and grant.remember):
        return "its signed decision did not approve and remember the call"
    if (grant.agent_id, grant.tool) != (agent.id, approval.tool):
        # Anyone may store a real grant under another agent or tool: it must name this pair.
        return (
            f"its signed decision was for tool {grant.tool!r} of agent {grant.agent_id!r}, "
            f"not {approval.tool!r} of {agent.id!r}"
        )
    key = keys.get(grant.approver)
    if key is None:
        return f"{grant.approver!r}, who granted it, has no public key in this turn's approvers"
    fields = grant.signed_fields()
    version = grant.signing_version
    problem = _signature_problem(fields, grant.signature, key, None, DECISION, version)
    return f"{grant.approver}'s {problem}" if problem else None


def _signer(
    keys: Mapping[str, str],
    approver: str,
    signature: Signature | None,
    noun: str,
    command: str,
) -> tuple[str | None, str | None]:
    """The key of `approver`, and the problem when there is none or nothing was signed."""
    key = keys.get(approver)
    if key is None:
        who = repr(approver) if approver else "an anonymous approver"
        return None, (
            f"{who} has no public key in agent.approvers, and this turn applies only {noun}s "
            f"signed by an approver with a key ({', '.join(sorted(keys))})"
        )
    if signature is None:
        return key, (
            f"the {noun} is not signed; this turn applies only {noun}s signed with "
            f"{approver}'s key (turnkeeper {command} --key)"
        )
    return key, None


def _signature_problem(
    fields: Mapping[str, JsonValue],
    signature: Signature,
    key: str,
    now: datetime | None,
    kind: str,
    version: int,
) -> str | None:
    # cryptography's Rust code imports its exception types (InvalidSignature) by name the first
    # time it raises one. Inside the sandbox that import would load cryptography a second time,
    # which aborts the worker process; passed through, it gets the module already loaded.
    with workflow.unsafe.imports_passed_through():
        return decision_signing.signature_problem(kind, fields, signature, key, now, version)
