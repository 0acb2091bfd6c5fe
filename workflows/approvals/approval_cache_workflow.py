"""`ApprovalCacheWorkflow`: the standing approvals of one agent, as a long-lived entity.

One per agent (workflow id `approval-cache-<agent id>`), shared by every worker and every turn of
that agent, durable like any workflow and visible in the Web UI, whose current details list the
standing approvals. It waits for messages and never ends on its own: `remember` and `revoke`
signals change it, the `standing` query reads it, and the `lookup` update answers a turn's one
batched question "which of these tools may I run without asking?". Its history grows with
every message, so it continues as new, carrying the approvals, when Temporal suggests it or
after `max_history_events`.
"""

from __future__ import annotations

import json
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue, VersioningBehavior

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError
    from turnkeeper.contracts.approvals import (
        APPROVAL_CACHE_WORKFLOW,
        QUERY_STANDING,
        SIGNAL_REMEMBER,
        SIGNAL_REVOKE,
        UPDATE_LOOKUP,
        ApprovalCacheInput,
        LookupInput,
        LookupResult,
        RememberInput,
        RevokeInput,
        StandingApproval,
    )
    from turnkeeper.workflows.inputs import plaintext
    from turnkeeper.workflows.inputs.plaintext import decoded


@workflow.defn(name=APPROVAL_CACHE_WORKFLOW)
class ApprovalCacheWorkflow:
    # Inputs are RawValues, so that what arrived unencrypted at a worker that requires
    # encryption is seen and refused (`workflows/inputs/plaintext.py`): standing approvals let tools
    # run without asking. Valid inputs decode exactly as the typed parameters did.
    @workflow.init
    def __init__(self, raw: RawValue) -> None:
        start = ApprovalCacheInput.model_validate(decoded(raw))
        # Decided here, before any signal or update of the first task reads the approvals.
        self._refused_start = plaintext.refused(raw)
        self._agent_id = start.agent_id
        self._max_history_events = start.max_history_events
        standing = [] if self._refused_start else start.standing
        self._standing = {approval.tool: approval for approval in standing}
        # Messages handled by this run: a run that has handled none never continues as new, so
        # a history already past the limit at start cannot make it loop.
        self._handled = 0

    @workflow.run
    async def run(self, raw: RawValue) -> None:
        if self._refused_start:
            raise plaintext.encryption_required("the approval cache's start")
        self._show()
        await workflow.wait_condition(self._history_is_long)
        # Let running handlers (a lookup in flight) finish, so no caller gets an error.
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.logger.info(
            "approval cache continues as new",
            extra={"agent_id": self._agent_id, "standing": len(self._standing)},
        )
        workflow.continue_as_new(
            ApprovalCacheInput(
                agent_id=self._agent_id,
                standing=self.standing(),
                max_history_events=self._max_history_events,
            )
        )

    def _history_is_long(self) -> bool:
        info = workflow.info()
        return self._handled > 0 and (
            info.is_continue_as_new_suggested()
            or info.get_current_history_length() >= self._max_history_events
        )

    @workflow.signal(name=SIGNAL_REMEMBER)
    def remember(self, raw: RawValue) -> None:
        """Stores (or replaces) the standing approval of `approval.tool`."""
        approval = self._signal_input(raw, RememberInput, SIGNAL_REMEMBER)
        if approval is None:
            return
        self._handled += 1
        self._standing[approval.tool] = StandingApproval(
            tool=approval.tool,
            approver=approval.approver,
            reason=approval.reason,
            at=approval.at or workflow.now(),
            grant=approval.grant,
        )
        workflow.logger.info(
            "standing approval remembered",
            extra={"tool": approval.tool, "approver": approval.approver},
        )
        self._show()

    @workflow.signal(name=SIGNAL_REVOKE)
    def revoke(self, raw: RawValue) -> None:
        """Removes the standing approval of `revocation.tool`; later calls ask a human again."""
        revocation = self._signal_input(raw, RevokeInput, SIGNAL_REVOKE)
        if revocation is None:
            return
        self._handled += 1
        if self._standing.pop(revocation.tool, None) is None:
            workflow.logger.warning(
                "revoke signal ignored: %r has no standing approval", revocation.tool
            )
            return
        workflow.logger.info(
            "standing approval revoked", extra={"tool": revocation.tool, "by": revocation.by}
        )
        self._show()

    def _signal_input(self, raw: RawValue, model: type[Any], name: str) -> Any:
        """The signal's input, or None when it is ignored: it arrived unencrypted where
        encryption is required, or it does not validate (which the typed parameters this
        replaced made Temporal drop with a warning)."""
        if plaintext.refused(raw):
            workflow.logger.warning("%s signal ignored: it arrived unencrypted", name)
            return None
        try:
            return model.model_validate(decoded(raw))
        except (ValidationError, ValueError, TypeError) as err:
            workflow.logger.warning("%s signal ignored: invalid payload: %s", name, err)
            return None

    @workflow.update(name=UPDATE_LOOKUP)
    def lookup(self, raw: RawValue) -> LookupResult:
        """The tools among `question.tools` that have a standing approval, in the order asked."""
        question = LookupInput.model_validate(decoded(raw))
        self._handled += 1
        approved = [tool for tool in dict.fromkeys(question.tools) if tool in self._standing]
        return LookupResult(approved=approved, standing=[self._standing[tool] for tool in approved])

    @lookup.validator
    def _validate_lookup(self, raw: RawValue) -> None:
        plaintext.reject_unencrypted(raw, f"the {UPDATE_LOOKUP} update")
        # Rejected here, as Temporal rejected it when the parameter was typed: raised in the
        # handler, a ValidationError would fail the workflow task instead.
        LookupInput.model_validate(decoded(raw))

    @workflow.query(name=QUERY_STANDING)
    def standing(self) -> list[StandingApproval]:
        """Every standing approval, by tool name."""
        return [self._standing[tool] for tool in sorted(self._standing)]

    def _show(self) -> None:
        workflow.set_current_details(details_markdown(self._agent_id, self.standing()))


def details_markdown(agent_id: str, standing: list[StandingApproval]) -> str:
    """The Web UI's current details: the standing approvals and how to revoke one."""
    lines = [f"**Standing approvals of agent `{agent_id}`**", ""]
    if not standing:
        lines.append("None: every call that needs approval asks a human.")
    for approval in standing:
        who = f" by {approval.approver}" if approval.approver else ""
        why = f": {approval.reason}" if approval.reason else ""
        when = approval.at.isoformat(timespec="minutes")
        signed = " (signed)" if approval.grant else ""
        lines.append(f"- `{approval.tool}`, approved{who}{signed} at {when}{why}")
    if standing:
        workflow_id = workflow.info().workflow_id
        payload = json.dumps({"tool": "<tool>", "by": "<you>"})
        lines += [
            "",
            f"revoke: `temporal workflow signal --workflow-id {workflow_id} --name revoke "
            f"--input '{payload}'`",
        ]
    return "\n".join(lines)


# AUTO_UPGRADE, unlike the turn: this workflow never ends, so pinned it would keep the build it
# started on polling forever and no old build could ever drain. Its state is a small dict rebuilt
# from signals, and every task it runs is a short handler, so moving it to the current build at
# its next task costs nothing. The price: each new build must replay this workflow's histories,
# so any change of its behaviour goes behind `workflow.patched("<change>")` (old branch kept until
# no history without the marker is open) and its golden histories in tests/histories stay
# replayed by tests/unit/workflows/test_replay.py. New message handlers need no patch.
# Registered only by versioned workers, like `PinnedAgentTurnWorkflow` (the server refuses a
# behaviour from an unversioned worker).
@workflow.defn(name=APPROVAL_CACHE_WORKFLOW, versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
class UpgradingApprovalCacheWorkflow(ApprovalCacheWorkflow):
    """`ApprovalCacheWorkflow` as a versioned worker runs it: always on the current build."""

    # The SDK wants the run method (and so the init beside it) declared on the registered class.
    @workflow.init
    def __init__(self, raw: RawValue) -> None:
        super().__init__(raw)

    @workflow.run
    async def run(self, raw: RawValue) -> None:
        await super().run(raw)
