"""`agent.output_schema`: an answer that parses and fits becomes the structured output; any
other answer becomes the corrective message the model reads."""

from __future__ import annotations

import json

import pytest
from turnkeeper.workflows.answer.structured_output import instruction, structured_answer

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": ["yes", "no"]}, "score": {"type": "integer"}},
    "required": ["verdict"],
    "additionalProperties": False,
}


def test_a_fitting_answer_is_its_json_value() -> None:
    assert structured_answer('{"verdict": "yes", "score": 3}', SCHEMA) == (
        {"verdict": "yes", "score": 3},
        None,
    )


@pytest.mark.parametrize("fence", ["```json\n{}\n```", "```\n{}\n```", "  ```json {} ```  "])
def test_a_markdown_fence_around_the_json_is_taken_off(fence: str) -> None:
    answer = fence.replace("{}", '{"verdict": "no"}')
    assert structured_answer(answer, SCHEMA) == ({"verdict": "no"}, None)


def test_an_answer_that_is_not_json_says_where_it_broke() -> None:
    value, corrective = structured_answer("Sure! Here it is: {", SCHEMA)
    assert value is None
    assert corrective is not None
    assert "- it is not JSON (Expecting value at character 0)" in corrective
    assert corrective.endswith("Answer again with only the JSON value.")


def test_an_empty_answer_is_not_json() -> None:
    value, corrective = structured_answer("", SCHEMA)
    assert value is None and corrective is not None and "it is not JSON" in corrective


def test_json_of_the_wrong_type_names_the_type() -> None:
    value, corrective = structured_answer('["yes"]', SCHEMA)
    assert value is None
    assert corrective is not None and "is not of type 'object'" in corrective


def test_each_problem_of_a_misfit_is_listed_with_where_it_is() -> None:
    _, corrective = structured_answer('{"verdict": "maybe", "score": "high", "x": 1}', SCHEMA)
    assert corrective is not None
    lines = [line for line in corrective.splitlines() if line.startswith("- ")]
    assert len(lines) == 3
    assert any(line.startswith("- at 'verdict': 'maybe' is not one of") for line in lines)
    assert any(line.startswith("- at 'score': 'high' is not of type 'integer'") for line in lines)
    assert any("'x' was unexpected" in line for line in lines)


def test_a_missing_required_field_is_named() -> None:
    _, corrective = structured_answer("{}", SCHEMA)
    assert corrective is not None and "'verdict' is a required property" in corrective


def test_a_json_null_answer_is_checked_like_any_value() -> None:
    assert structured_answer("null", {"type": "null"}) == (None, None)
    value, corrective = structured_answer("null", SCHEMA)
    assert value is None and corrective is not None


def test_the_instruction_carries_the_schema_verbatim() -> None:
    schema = {"type": "object", "description": "größe"}
    told = instruction(schema)
    assert told.endswith(json.dumps(schema, ensure_ascii=False))
    assert "one JSON value, with no other text" in told
