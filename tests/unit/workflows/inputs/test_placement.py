"""Where a turn may run, checked as it starts: an id the runtime keeps, a nested id that its
parent workflow did not start, and a `parent` the request claims but the start does not show.
A refused start names the id or the `parent` field; every id the runtime itself gives passes."""

from __future__ import annotations

import pytest
from temporalio import workflow
from turnkeeper.workflows.inputs.placement import placement_problem

from tests.unit.builders import request


def started_by(workflow_id: str) -> workflow.ParentInfo:
    return workflow.ParentInfo(namespace="default", run_id="run-1", workflow_id=workflow_id)


PARENT = {"workflow_id": "lead", "call_id": "toolu_1", "depth": 1}


@pytest.mark.parametrize(
    ("workflow_id", "parent"),
    [
        ("turn-research-1a2b", None),
        ("lead/writer-1", started_by("lead")),  # a sub-agent's turn
        ("lead/writer-1/critic-2", started_by("lead/writer-1")),  # one level further down
        ("session-7/turn-3", started_by("session-7")),  # a session's turn
        ("lead/rate-limit-helper-1", started_by("lead")),  # a sub-agent named like a prefix
    ],
)
def test_the_ids_the_runtime_gives_its_turns_pass(
    workflow_id: str, parent: workflow.ParentInfo | None
) -> None:
    claimed = PARENT | {"workflow_id": parent.workflow_id} if parent else None
    assert placement_problem(request(parent=claimed), workflow_id, parent) is None
    assert placement_problem(request(), workflow_id, parent) is None


@pytest.mark.parametrize(
    ("workflow_id", "parent", "says"),
    [
        ("approval-cache-research", None, "an agent's standing approvals"),
        ("turnkeeper-tenant/acme", None, "a tenant's spend ledger"),
        ("rate-limit-anthropic:*", None, "a model's rate-limit ledger"),
        ("approval-cache-x", started_by("lead"), "an agent's standing approvals"),
        ("lead/writer-1", None, "ids with '/'"),
        ("lead/writer-1", started_by("other"), "ids with '/'"),
        ("lead/writer-1/x", started_by("lead"), "ids with '/'"),
    ],
)
def test_an_id_the_runtime_keeps_is_refused_by_name(
    workflow_id: str, parent: workflow.ParentInfo | None, says: str
) -> None:
    problem = placement_problem(request(), workflow_id, parent)
    assert problem is not None
    assert problem.startswith(f"id {workflow_id!r} is reserved") and says in problem


def test_a_parent_set_by_a_caller_is_refused() -> None:
    problem = placement_problem(request(parent=PARENT), "turn-1", None)
    assert problem is not None and problem.startswith("parent: is set by the runtime")
    assert "'lead'" in problem


def test_a_parent_that_did_not_start_the_turn_is_refused() -> None:
    problem = placement_problem(request(parent=PARENT), "other/writer-1", started_by("other"))
    assert problem is not None and problem.startswith("parent: names 'lead'")
    assert "'other' started this turn" in problem
