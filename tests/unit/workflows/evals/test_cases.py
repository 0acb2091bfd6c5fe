"""A case's turn id and request, as the evaluation run builds them."""

from __future__ import annotations

from turnkeeper.contracts.evals import EvalRunInput
from turnkeeper.contracts.turn import TurnRequest
from turnkeeper.contracts.turn_ids import NESTED_ID_SEPARATOR
from turnkeeper.workflows.evals.cases import Unit, case_request, child_id, total_units, unit_at


def run(**overrides: object) -> EvalRunInput:
    fields: dict[str, object] = {
        "dataset": "d",
        "request": {
            "agent": {"id": "a", "model": "anthropic:claude-sonnet-4-6", "max_iterations": 4},
            "task": {"constraints": {"cost_budget_usd": 0.5}},
        },
        "models": ["anthropic:claude-sonnet-4-6", "openai:gpt-4o"],
        "repeat": 2,
        "cases": [{"name": "refund / EU ünïcode", "inputs": "hi"}, {"name": "b", "inputs": "x"}],
    }
    return EvalRunInput.model_validate({**fields, **overrides})


def test_units_cover_every_case_model_and_repetition_once_repetition_last() -> None:
    given = run()
    units = [unit_at(given, n) for n in range(total_units(given))]
    assert len(set(units)) == total_units(given) == 8
    assert units[:4] == [Unit(0, 0, 0), Unit(0, 1, 0), Unit(1, 0, 0), Unit(1, 1, 0)]


def test_child_ids_are_nested_under_the_run_and_keep_only_turn_id_characters() -> None:
    given = run(
        cases=[{"name": "refund / EU ünïcode", "inputs": "hi"}, {"name": "///", "inputs": "x"}]
    )
    first = child_id("eval-1", given, Unit(0, 1, 1))
    assert first == "eval-1/1.refund-EU-n-code-2.openai:gpt-4o-2"
    assert first.count(NESTED_ID_SEPARATOR) == 1
    assert child_id("eval-1", given, Unit(1, 0, 0)).startswith("eval-1/2.x-1.")


def test_a_case_request_lays_the_inputs_over_the_agent_file_and_caps_the_budget() -> None:
    given = run(
        cases=[
            {
                "name": "c",
                "inputs": {"task": {"input": "go", "constraints": {"max_tool_interactions": 1}}},
            }
        ],
        tenant="acme",
    )
    request = case_request("eval-1", given, Unit(0, 1, 0), left_usd=0.2)
    assert isinstance(request, TurnRequest)
    assert request.agent.model == "openai:gpt-4o" and request.agent.max_iterations == 4
    assert request.task.input == "go" and request.task.constraints.max_tool_interactions == 1
    assert request.task.constraints.cost_budget_usd == 0.2  # what the run has left, not 0.5
    assert request.tenant == "acme"
    assert request.parent is not None and request.parent.workflow_id == "eval-1"


def test_a_case_cannot_set_its_tenant_or_parent() -> None:
    inputs = {"task": {"input": "go"}, "tenant": "someone-else", "parent": {"workflow_id": "x"}}
    given = run(cases=[{"name": "c", "inputs": inputs}])
    request = case_request("eval-1", given, Unit(0, 0, 0), left_usd=None)
    assert isinstance(request, TurnRequest)
    assert request.tenant is None and request.parent is not None
    assert request.parent.workflow_id == "eval-1"


def test_an_invalid_case_request_is_a_sentence_naming_the_field() -> None:
    given = run(cases=[{"name": "c", "inputs": {"agent": {"max_iterations": 0}}}])
    problem = case_request("eval-1", given, Unit(0, 0, 0), left_usd=None)
    assert isinstance(problem, str) and problem.startswith("agent.max_iterations:")
    assert "must be" in case_request(
        "eval-1", run(cases=[{"name": "c", "inputs": 3}]), Unit(0, 0, 0), None
    )
