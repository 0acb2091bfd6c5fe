"""The payloads a caller sends into a running turn (`approve`/`decide`, `submit_tool_result`,
`extend_budget`): each kind of wrong field is refused by name, so the handler can reject the
payload without touching the turn."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from turnkeeper.contracts.budget_extension import ExtendBudgetInput
from turnkeeper.contracts.signals import ApproveInput, SubmitToolResultInput


def refusal(model: type[BaseModel], payload: Any) -> str:
    with pytest.raises(ValidationError) as raised:
        model.model_validate(payload)
    return str(raised.value)


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ({"approved": True}, "call_id\n  Field required"),
        ({"call_id": "", "approved": True}, "call_id\n  String should have at least 1"),
        ({"call_id": "a"}, "approved\n  Field required"),
        ({"call_id": "a", "approved": "perhaps"}, "approved\n  Input should be a valid boolean"),
        ({"call_id": "a", "approved": True, "input": "path=x"}, "input\n  Input should be"),
        ({"call_id": "a", "approved": True, "signature": {"value": "x"}}, "signature.expires_at"),
        (
            {
                "call_id": "a",
                "approved": True,
                "signature": {"expires_at": "t", "value": "x" * 257},
            },
            "signature.value",
        ),
        ({"call_id": "a", "approved": True, "approvd_by": "ann"}, "approvd_by\n  Extra inputs"),
        ("approve", "Input should be a valid dictionary or instance of ApproveInput"),
    ],
)
def test_a_wrong_decision_is_refused_by_name(payload: Any, says: str) -> None:
    assert says in refusal(ApproveInput, payload)


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ({"output": "x"}, "call_id\n  Field required"),
        ({"call_id": "", "output": "x"}, "call_id\n  String should have at least 1"),
        ({"call_id": "a", "is_error": "sometimes"}, "is_error"),
        ({"call_id": "a", "result": "x"}, "result\n  Extra inputs"),
    ],
)
def test_a_wrong_tool_result_is_refused_by_name(payload: Any, says: str) -> None:
    assert says in refusal(SubmitToolResultInput, payload)


def test_a_tool_result_may_be_any_json_value() -> None:
    for output in (None, "text", 3, [1, {"a": None}], {"rows": []}):
        assert SubmitToolResultInput(call_id="a", output=output).output == output


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ({}, "an extension needs at least one positive amount"),
        ({"reason": "more please"}, "at least one positive amount"),
        ({"cost_usd": 0}, "cost_usd\n  Input should be greater than 0"),
        ({"cost_usd": -1.5}, "cost_usd"),
        ({"cost_usd": math.inf}, "cost_usd\n  Input should be a finite number"),
        ({"cost_usd": "5"}, "cost_usd\n  Input should be a valid number"),
        ({"time_ms": 1.5}, "time_ms\n  Input should be a valid integer"),
        ({"time_ms": "500"}, "time_ms\n  Input should be a valid integer"),
        ({"time_ms": 0}, "time_ms\n  Input should be greater than 0"),
        ({"iterations": True}, "iterations\n  Input should be a valid integer"),
        ({"iterations": 0}, "iterations\n  Input should be greater than 0"),
        ({"tool_interactions": "2"}, "tool_interactions"),
        ({"tool_interactions": 0}, "tool_interactions\n  Input should be greater than 0"),
        ({"iterations": 1, "tokens": 5}, "tokens\n  Extra inputs"),
    ],
)
def test_a_wrong_budget_extension_is_refused_by_name(payload: Any, says: str) -> None:
    assert says in refusal(ExtendBudgetInput, payload)


def test_the_smallest_extensions_are_accepted() -> None:
    smallest = {"cost_usd": 0.01, "time_ms": 1, "iterations": 1, "tool_interactions": 1}
    assert ExtendBudgetInput.model_validate(smallest).amounts() == {
        "cost": 0.01,
        "time": 1,
        "iterations": 1,
        "tool_interactions": 1,
    }


def test_an_extension_lists_only_the_budgets_it_extends() -> None:
    extension = ExtendBudgetInput(cost_usd=0.5, iterations=2)
    assert extension.amounts() == {"cost": 0.5, "iterations": 2}
