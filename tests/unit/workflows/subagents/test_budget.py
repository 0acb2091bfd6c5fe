"""What a sub-agent inherits from its parent (`workflows/subagents/budget.py`): the budgets left,
split between calls that run side by side, its own limits where smaller, and the approval rules,
approvers and tool boundary of the parent."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from turnkeeper.contracts.turn import AgentSpec, Constraints, SubagentSpec
from turnkeeper.workflows.subagents.budget import (
    Remaining,
    child_agent,
    child_constraints,
    shared,
    spent_problem,
)

UNLIMITED = Remaining(time_ms=None, cost_usd=None, tool_interactions=None)


def spec(own: dict[str, Any] | None = None, **agent: Any) -> SubagentSpec:
    return SubagentSpec.model_validate(
        {
            "name": "helper",
            "agent": {"id": "helper", "model": "anthropic:claude-sonnet-4-6", **agent},
            "constraints": own,
        }
    )


def child(parent: dict[str, Any], left: Remaining, sub: SubagentSpec | None = None) -> Constraints:
    return child_constraints(Constraints.model_validate(parent), left, sub or spec())


def test_the_child_gets_what_the_parent_has_left() -> None:
    got = child({}, Remaining(time_ms=1234.9, cost_usd=0.25, tool_interactions=3))
    assert (got.time_budget_ms, got.cost_budget_usd, got.max_tool_interactions) == (1234, 0.25, 3)


def test_unlimited_stays_unlimited() -> None:
    got = child({}, UNLIMITED)
    assert (got.time_budget_ms, got.cost_budget_usd, got.max_tool_interactions) == (None,) * 3


@pytest.mark.parametrize(
    ("own", "left", "expected"),
    [
        # own smaller: own; left smaller: left; either unlimited: the other.
        ((100, 0.1, 1), (200, 0.2, 2), (100, 0.1, 1)),
        ((300, 0.3, 3), (200, 0.2, 2), (200, 0.2, 2)),
        ((100, 0.1, 1), (None, None, None), (100, 0.1, 1)),
        ((None, None, None), (200, 0.2, 2), (200, 0.2, 2)),
        ((200, 0.2, 2), (200, 0.2, 2), (200, 0.2, 2)),
    ],
)
def test_its_own_limits_apply_where_smaller(
    own: tuple[Any, Any, Any], left: tuple[Any, Any, Any], expected: tuple[Any, Any, Any]
) -> None:
    mine = {"time_budget_ms": own[0], "cost_budget_usd": own[1], "max_tool_interactions": own[2]}
    got = child({}, Remaining(*left), spec(mine))
    assert (got.time_budget_ms, got.cost_budget_usd, got.max_tool_interactions) == expected


def test_calls_side_by_side_split_cost_and_tool_interactions_but_not_time() -> None:
    left = Remaining(time_ms=1000.0, cost_usd=0.9, tool_interactions=7)
    assert shared(left, 3) == Remaining(
        time_ms=1000.0, cost_usd=pytest.approx(0.3), tool_interactions=2
    )
    assert shared(left, 1) == left
    assert shared(left, 0) == left
    assert shared(UNLIMITED, 4) == UNLIMITED


@pytest.mark.parametrize(
    ("left", "says"),
    [
        (Remaining(0.5, None, None), "time budget is spent"),
        (Remaining(0, None, None), "time budget is spent"),
        (Remaining(None, 0.0, None), "cost budget is spent"),
        (Remaining(None, -0.1, None), "cost budget is spent"),
    ],
)
def test_a_spent_budget_starts_no_child(left: Remaining, says: str) -> None:
    assert spent_problem(left) == f"the {says}"


@pytest.mark.parametrize(
    "left",
    [UNLIMITED, Remaining(1, 0.0001, 0), Remaining(1.0, None, None), Remaining(None, 1e-9, None)],
)
def test_anything_left_starts_a_child(left: Remaining) -> None:
    assert spent_problem(left) is None


def test_approval_rules_join_the_parents() -> None:
    got = child(
        {"require_approval": ["write_file", "send"]},
        UNLIMITED,
        spec({"require_approval": ["send", "delete"]}),
    )
    assert got.require_approval == ["write_file", "send", "delete"]
    assert child({"require_approval": ["*"]}, UNLIMITED).require_approval == ["*"]


def test_the_approval_timeout_is_the_parents_or_its_own_where_shorter() -> None:
    assert child({"approval_timeout_s": 60}, UNLIMITED).approval_timeout_s == 60
    shorter = spec({"approval_timeout_s": 30})
    assert child({"approval_timeout_s": 60}, UNLIMITED, shorter).approval_timeout_s == 30
    longer = spec({"approval_timeout_s": 90})
    assert child({"approval_timeout_s": 60}, UNLIMITED, longer).approval_timeout_s == 60


def test_a_child_never_pauses_for_an_extension() -> None:
    paused = spec({"on_budget_exhausted": "pause"})
    assert child({"on_budget_exhausted": "pause"}, UNLIMITED, paused).on_budget_exhausted == "fail"


def test_other_own_constraints_are_kept() -> None:
    assert child({}, UNLIMITED, spec({"max_argument_corrections": 1})).max_argument_corrections == 1


def test_the_tool_boundary_holds_for_the_child() -> None:
    sub = spec(tools=["read_file", "list_files"], subagents=[spec_json("deeper")])
    assert child({}, UNLIMITED, sub).allowed_tools is None
    bounded = child({"allowed_tools": ["read_file", "list_files", "x"]}, UNLIMITED, sub)
    assert bounded.allowed_tools == ["read_file", "list_files", "deeper"]
    narrowed = spec({"allowed_tools": ["read_file", "write_file"]}, tools=["read_file"])
    assert child({"allowed_tools": ["read_file"]}, UNLIMITED, narrowed).allowed_tools == [
        "read_file"
    ]
    assert child({}, UNLIMITED, narrowed).allowed_tools == ["read_file", "write_file"]


def spec_json(name: str) -> dict[str, Any]:
    return {"name": name, "agent": {"id": name, "model": "anthropic:claude-sonnet-4-6"}}


def test_the_child_decides_with_the_parents_approvers_unless_it_names_its_own() -> None:
    parent = AgentSpec(id="lead", model="anthropic:claude-sonnet-4-6", approvers=["alice"])
    assert child_agent(parent, spec()).approvers == ["alice"]
    assert child_agent(parent, spec(approvers=["bob"])).approvers == ["bob"]
    anyone = AgentSpec(id="lead", model="anthropic:claude-sonnet-4-6")
    assert child_agent(anyone, spec()).approvers is None
    assert child_agent(anyone, spec()) == spec().agent


def test_a_subagent_name_the_boundary_lists_too_stays_offered() -> None:
    sub = spec(tools=["read_file"], subagents=[spec_json("deeper")])
    bounded = child({"allowed_tools": ["read_file", "deeper"]}, UNLIMITED, sub)
    assert bounded.allowed_tools == ["read_file", "deeper"]


def test_what_is_left_cannot_change_once_shared() -> None:
    left = Remaining(time_ms=1.0, cost_usd=1.0, tool_interactions=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        left.cost_usd = 2.0  # type: ignore[misc]
