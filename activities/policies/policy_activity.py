"""The `check_policy` activity and the worker's policy files behind it, re-read when they change.

The files are looked at (one `stat` each) before every decision: an edit reaches the next tool
call on every worker without a restart, and a worker that idles does no work. An edit that does
not parse leaves the set in force as it was and logs an error naming file and line, once per
edit; the files as they were at the start must parse (`PolicyBook.open` raises otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from temporalio import activity
from turnkeeper.activities.policies.policy_set import CedarPolicies, PolicyFileError
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.policy_io import (
    ACTIVITY_CHECK_POLICY,
    PolicyCaller,
    PolicyCheckInput,
    PolicyCheckResult,
)

from turnkeeper.ground.logs import get_logger

log = get_logger(__name__)

# What the files looked like when last read: (size, modification time in ns) each, None if gone.
Stamp = tuple[tuple[int, int] | None, ...]


class PolicyBook:
    """The worker's policy set, kept in step with its files."""

    def __init__(self, paths: Sequence[Path], policies: CedarPolicies | None) -> None:
        self.paths = list(paths)
        self.policies = policies
        self._stamp = _stamp(self.paths)

    @classmethod
    def open(cls, paths: Sequence[Path]) -> PolicyBook:
        """The book of `paths` (none: a worker without policies, which permits every call).

        Raises:
            PolicyFileError: A file cannot be read or does not parse.
        """
        stamp = _stamp(paths)
        policies = CedarPolicies.read(list(paths)) if paths else None
        book = cls(paths, policies)
        book._stamp = stamp
        return book

    def current(self) -> CedarPolicies | None:
        """The set in force, re-read first when a file changed since it was last read."""
        stamp = _stamp(self.paths)
        if stamp == self._stamp:
            return self.policies
        self._stamp = stamp  # a bad edit is logged once, not at every call until it is fixed
        try:
            fresh = CedarPolicies.read(self.paths)
        except PolicyFileError as err:
            log.error("policy_reload_failed", error=str(err), kept=_short(self.policies))
            return self.policies
        log.info("policies_reloaded", policy_hash=fresh.digest, was=_short(self.policies))
        self.policies = fresh
        return fresh

    def decide(self, call: PolicyCheckInput) -> PolicyCheckResult:
        """What the set in force decides for `call`; a worker without files permits it."""
        policies = self.current()
        if policies is None:
            return PolicyCheckResult(effect="permit")
        decided, errors = policies.decide(call)
        if errors:
            # A policy whose condition failed on this call (it read an attribute the input
            # lacks) did not count: said, so that a rule meant to forbid is seen to miss.
            log.warning("policy_evaluation_errors", tool=call.tool, errors=errors)
        return decided

    def rule_answer(
        self, caller: PolicyCaller | None, answer: Message, cost_usd: float
    ) -> list[PolicyCheckResult]:
        """The decision on each tool call of a model's `answer` (none without `caller`), made
        in the model call's own activity: a turn then spends no activity on a call that needs
        no second look. `cost_usd` is the answer's own cost, part of the turn's so far."""
        if caller is None:
            return []
        caller = caller.model_copy(update={"cost_usd": round(caller.cost_usd + cost_usd, 6)})
        now = datetime.now(UTC)
        return [
            self.decide(
                PolicyCheckInput(caller=caller, tool=use.name, input=use.input, time=now)
            ).model_copy(update={"call_id": use.id})
            for use in answer.tool_uses()
        ]


class PolicyActivities:
    """The `check_policy` activity over one worker's policy book: for a call whose arguments an
    approver edited (the others were decided with their model call)."""

    def __init__(self, book: PolicyBook) -> None:
        self._book = book

    @activity.defn(name=ACTIVITY_CHECK_POLICY)
    async def check_policy(self, call: PolicyCheckInput) -> PolicyCheckResult:
        """What the worker's policies decide for one tool call. Run on the event loop: a stat
        per file and one Cedar evaluation take a fraction of a millisecond, less than a hop to
        a thread would (and a worker need not have an activity executor)."""
        return self._book.decide(call)


def _stamp(paths: Sequence[Path]) -> Stamp:
    stamps: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            found = path.stat()
        except OSError:
            stamps.append(None)
        else:
            stamps.append((found.st_size, found.st_mtime_ns))
    return tuple(stamps)


def _short(policies: CedarPolicies | None) -> str:
    return policies.digest[:12] if policies is not None else ""
