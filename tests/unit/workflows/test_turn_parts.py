"""The parts a turn is made of: a turn carried across continue-as-new by main before there were
parts loads into them with every value kept, what this build carries is the shape that build
reads, the fields a run does not carry stay out, and no workflow code outside a part writes a
part's fields."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from turnkeeper.contracts.signals import DecisionRecord
from turnkeeper.contracts.turn import AgentReport, TurnRequest
from turnkeeper.workflows.agent_turn_workflow import CarriedTurn
from turnkeeper.workflows.turn_parts import PARTS
from turnkeeper.workflows.turn_state import Turn, TurnProgress

from tests.unit.builders import START, turn

ROOT = Path(__file__).resolve().parents[3]
# Written by main at the commit its `made_on` names (see tests/workflows/test_continue_as_new.py,
# which runs the same carry to its end on a real server).
FIXTURE = json.loads((ROOT / "tests/workflows/carried/turn_at_272ef87.json").read_text())
CARRIED: dict[str, Any] = FIXTURE["carried"]["turn"]
AT = "2026-01-01T00:01:00Z"


def carried_fields() -> list[tuple[str, str]]:
    """Every carried field of every part, as (part, field)."""
    return [
        (name, field)
        for name, part in PARTS.items()
        for field, info in part.model_fields.items()
        if not info.exclude
    ]


def test_the_fixture_sets_every_field_a_turn_carries() -> None:
    keys = set(TurnProgress.model_fields) - set(PARTS) | {f for _, f in carried_fields()}
    assert set(CARRIED) == keys


@pytest.mark.parametrize(("name", "field"), carried_fields())
def test_a_carry_from_before_parts_puts_each_value_into_its_part(name: str, field: str) -> None:
    progress = CarriedTurn.model_validate(FIXTURE["carried"]).turn
    dumped = getattr(progress, name).model_dump(mode="json", include={field})[field]
    assert dumped == CARRIED[field]


def test_a_carry_from_before_parts_loads_and_dumps_back_unchanged() -> None:
    progress = CarriedTurn.model_validate(FIXTURE["carried"]).turn
    assert progress.model_dump(mode="json") == CARRIED
    # The fields no carry of a running turn holds (it carries at an iteration's start).
    waiting = {
        **CARRIED,
        "ended": AT,
        "budget_request": {"number": 2, "budget": "time", "message": "m", "since": AT},
        "capacity_awaited": {"key": "k", "awaiting": "input_tokens", "wait_ms": 5, "since": AT},
    }
    loaded = TurnProgress.model_validate(waiting)
    assert loaded.fleet.capacity_awaited is not None and loaded.budget.budget_request is not None
    assert loaded.model_dump(mode="json") == waiting


def test_this_build_carries_the_shape_a_build_before_parts_reads() -> None:
    """A deploy can be rolled back: the older build must load what this one carries."""
    request = TurnRequest.model_validate(FIXTURE["request"])
    resumed = Turn.resume(request, CarriedTurn.model_validate(FIXTURE["carried"]).turn)
    carry = CarriedTurn(turn=resumed.progress(), stream=None)
    payload = pydantic_data_converter.payload_converter.to_payloads([carry])[0]
    assert json.loads(payload.data) == FIXTURE["carried"]


def test_what_a_run_does_not_carry_stays_out() -> None:
    t = turn()
    t.approvals.verify_signatures_as(3, "first-run")
    t.children.cancelled("turn-x/helper-1", t.report("cancelled", START))
    carried = t.progress().model_dump(mode="json")
    assert not {"signing_version", "signed_run_id", "cancelled_children", "request"} & set(carried)
    resumed = Turn.resume(t.request, TurnProgress.model_validate(carried))
    assert (resumed.approvals.signed_run_id, resumed.children.cancelled_children) == (None, {})
    assert isinstance(t.children.cancelled_children["turn-x/helper-1"], AgentReport)


def test_no_part_is_named_as_a_key_of_the_flat_payload() -> None:
    """The validator tells a part given whole (a dict or a part) from flat keys by its name."""
    assert not set(PARTS) & set(CARRIED)


def test_a_part_given_whole_is_kept() -> None:
    t = turn()
    t.approvals.record(
        DecisionRecord(call_id="u1", tool="t", approved=True, approver="a", reason="", at=START)
    )
    resumed = Turn.resume(t.request, t.progress())
    assert resumed.approvals is t.approvals


# What changes a container in place: a part's list, dict or set changed through one of these
# outside the part is a write as much as an assignment is.
_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "add", "discard"}
_OWNED = {(name, field) for name, part in PARTS.items() for field in part.model_fields}


def _part_field(node: ast.expr) -> tuple[str, str] | None:
    """(part, field) when `node` is `<anything>.<part>.<field>`, with any subscripts after."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
        pair = (node.value.attr, node.attr)
        return pair if pair in _OWNED else None
    return None


def _writes(tree: ast.AST) -> list[tuple[int, tuple[str, str]]]:
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATORS
        ):
            targets = [node.func.value]
        for target in targets:
            owned = _part_field(target)
            if owned:
                found.append((node.lineno, owned))
    return found


def test_no_workflow_code_outside_a_part_writes_its_fields() -> None:
    outside = sorted(
        (str(path.relative_to(ROOT)), line, owned)
        for path in (ROOT / "workflows").rglob("*.py")
        if path.name != "turn_parts.py"
        for line, owned in _writes(ast.parse(path.read_text()))
    )
    assert outside == []


def test_the_write_check_sees_the_writes_it_forbids() -> None:
    source = (
        "turn.fleet.capacity_awaited = None\n"
        "turn.spend.cost_usd += 1\n"
        "turn.children.cancelled_children['x'] = r\n"
        "turn.steers.queued_steers.append(s)\n"
        "turn.fleet.waited(5)\n"
    )
    assert [owned for _, owned in _writes(ast.parse(source))] == [
        ("fleet", "capacity_awaited"),
        ("spend", "cost_usd"),
        ("children", "cancelled_children"),
        ("steers", "queued_steers"),
    ]
