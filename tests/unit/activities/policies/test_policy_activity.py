"""The `check_policy` activity over a worker's policy files: it permits everything without
files, follows an edit at the next call, and keeps the set in force when an edit does not parse."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.policies.policy_activity import PolicyActivities, PolicyBook
from turnkeeper.activities.policies.policy_set import PolicyFileError
from turnkeeper.contracts.policy_io import PolicyCaller, PolicyCheckInput, PolicyCheckResult

from tests.support.policy_files import NO_SEARCHES, POLICIES, write_policies

SEARCH = PolicyCheckInput(
    caller=PolicyCaller(agent_id="a"), tool="search_files", time=datetime.now(UTC)
)


async def _check(book: PolicyBook) -> PolicyCheckResult:
    return await ActivityEnvironment().run(PolicyActivities(book).check_policy, SEARCH)


def _touch_later(path: Path, text: str) -> None:
    """Writes `text` with a modification time after the last one, however coarse the clock."""
    before = path.stat().st_mtime_ns
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before + 10**9, before + 10**9))


async def test_without_files_every_call_is_permitted() -> None:
    decided = await _check(PolicyBook.open([]))
    assert (decided.effect, decided.policies, decided.policy_hash) == ("permit", [], "")


async def test_an_edit_reaches_the_next_call_and_a_bad_one_keeps_the_set(tmp_path: Path) -> None:
    path = write_policies(tmp_path)
    book = PolicyBook.open([path])
    first = await _check(book)
    assert first.effect == "permit"

    _touch_later(path, POLICIES + NO_SEARCHES)
    second = await _check(book)
    assert (second.effect, second.policies) == ("forbid", ["no-searches"])
    assert second.policy_hash != first.policy_hash

    _touch_later(path, POLICIES + "forbid(principal, action resource);\n")
    with capture_logs() as logs:
        third = await _check(book)
        fourth = await _check(book)
    assert third == second == fourth  # the set in force stays
    [failed] = [line for line in logs if line["event"] == "policy_reload_failed"]  # once
    assert f"{path}:" in failed["error"] and failed["log_level"] == "error"


def test_a_file_that_does_not_parse_at_start_is_refused(tmp_path: Path) -> None:
    path = write_policies(tmp_path, "permit(principal, action, resource);\nforbid(;\n")
    with pytest.raises(PolicyFileError, match=r"tools\.cedar:2: "):
        PolicyBook.open([path])
