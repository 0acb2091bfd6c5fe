"""Checking a tool call's arguments against its schema, in words the model can act on: pure
functions, no server (tests/workflows/test_tool_validation.py runs them in the sandbox)."""

from __future__ import annotations

import json
import socket
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field
from turnkeeper.activities.tools.registry import worker_tool
from turnkeeper.contracts.tool_validation import (
    corrective_message,
    schema_problem,
    validation_problems,
    value_problems,
)


class Window(BaseModel):
    start: int
    end: int


@worker_tool
def fetch_lines(
    path: Annotated[str, Field(description="The file to read.")],
    window: Window | None = None,
    tags: list[str] | None = None,
    mode: Annotated[str, Field(pattern="^(head|tail)$")] = "head",
) -> str:
    """Fetch some lines of a file."""
    return path


SCHEMA: dict[str, Any] = fetch_lines.input_schema()


def test_arguments_that_fit_have_no_problems() -> None:
    arguments = {"path": "a.md", "window": {"start": 1, "end": 2}, "tags": ["x"], "mode": "tail"}
    assert validation_problems(SCHEMA, arguments) == []
    assert validation_problems(SCHEMA, {"path": "a.md", "window": None}) == []


def test_each_problem_names_the_argument() -> None:
    schema = {
        "type": "object",
        "properties": {"path": {"type": "integer"}},
        "required": ["path"],
        "additionalProperties": False,
    }
    assert validation_problems(schema, {"path": "x"}) == [
        "argument 'path': 'x' is not of type 'integer'"
    ]
    assert validation_problems(schema, {}) == ["missing required argument 'path'"]
    assert validation_problems(schema, {"path": 1, "foo": 2}) == [
        "unexpected argument 'foo' (allowed: path)"
    ]


def test_nested_problems_name_their_json_path_and_come_sorted() -> None:
    arguments = {"window": {"start": "x"}, "tags": ["a", 2, 3], "mode": "all", "colour": "red"}
    assert validation_problems(SCHEMA, arguments) == [
        "unexpected argument 'colour' (allowed: path, window, tags, mode)",
        "argument 'mode': 'all' does not match '^(head|tail)$'",
        "missing required argument 'path'",
        "argument 'tags[1]': 2 is not of type 'string'",
        "argument 'tags[2]': 3 is not of type 'string'",
        "missing required argument 'window.end'",
        "argument 'window.start': 'x' is not of type 'integer'",
    ]
    # Deterministic: the same call gives the same text, whatever the order of its keys.
    reordered = dict(reversed(list(arguments.items())))
    assert validation_problems(SCHEMA, reordered) == validation_problems(SCHEMA, arguments)


def test_a_value_of_no_allowed_form_lists_the_forms() -> None:
    assert validation_problems(SCHEMA, {"path": "a", "window": 5}) == [
        "argument 'window': 5 is not valid under any of the given schemas (expected Window | null)"
    ]


STRING = {"type": "object", "properties": {"s": {"type": "string", "maxLength": 1}}}


def test_a_long_bad_value_is_shown_in_its_first_sixty_characters() -> None:
    [problem] = validation_problems(SCHEMA, {"path": "a", "tags": "x" * 10_000})
    assert problem == (
        "argument 'tags': '" + "x" * 58 + "… is not valid under any of the given schemas "
        "(expected array of string | null)"
    )
    # 60 characters are shown whole, 61 are cut to 59 and an ellipsis.
    [whole] = validation_problems(STRING, {"s": "y" * 58})
    assert whole == "argument 's': '" + "y" * 58 + "' is too long"
    [cut] = validation_problems(STRING, {"s": "y" * 59})
    assert cut == "argument 's': '" + "y" * 58 + "… is too long"


def test_a_flood_of_problems_is_cut_to_ten_and_a_count_of_the_rest() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "array", "items": {"type": "string"}}}}
    problems = validation_problems(schema, {"n": list(range(50))})
    assert len(problems) == 11
    assert problems[9] == "argument 'n[18]': 18 is not of type 'string'"  # sorted as text
    assert problems[10:] == ["and 40 more problems of the same kinds"]
    assert len(validation_problems(schema, {"n": list(range(10))})) == 10
    assert validation_problems(schema, {"n": list(range(11))})[10:] == [
        "and 1 more problems of the same kinds"
    ]


def test_formats_are_hints_not_checks() -> None:
    schema = {"type": "object", "properties": {"to": {"type": "string", "format": "email"}}}
    assert validation_problems(schema, {"to": "not an address"}) == []


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"type": "strin"}, "at 'type': 'strin' is not valid under any of the given schemas"),
        (
            {"properties": {"a": {"pattern": "("}}},
            "at 'properties.a.pattern': '(' is not a 'regex'",
        ),
        ({"$ref": "#/$defs/Missing"}, "it refers to '#/$defs/Missing', which is not in it"),
    ],
)
def test_an_invalid_schema_is_one_problem_never_an_exception(
    schema: dict[str, Any], reason: str
) -> None:
    assert validation_problems(schema, {"a": "x"}) == [
        f"the tool's input schema is itself invalid ({reason}), so no arguments can be checked "
        "against it; this is a fault of the tool, not of your arguments"
    ]


def test_schema_problem_tells_the_tool_s_fault_from_the_model_s() -> None:
    assert schema_problem(SCHEMA) is None
    problem = schema_problem({"type": "strin"})
    assert problem is not None and problem.startswith("the tool's input schema is itself invalid")
    # A valid schema that {} does not fit is the model's business, not the schema's.
    assert schema_problem({"type": "object", "required": ["x"]}) is None
    assert schema_problem({"type": "object"}) is None


def test_a_remote_ref_is_never_fetched() -> None:
    # jsonschema's default registry would fetch it over HTTP: I/O, from workflow code.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/schema.json"
        [problem] = validation_problems({"$ref": url}, {})
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert f"it refers to {url!r}, which is not in it" in problem


def test_the_corrective_message_says_what_to_fix_and_how_often_it_may() -> None:
    problems = validation_problems(SCHEMA, {"window": {"start": 1, "end": 2}})
    message = corrective_message("fetch_lines", problems, 2, schema=SCHEMA)
    assert message == (
        "The call to fetch_lines was not run: its arguments do not fit the tool's input schema.\n"
        "- missing required argument 'path'\n"
        "Expected arguments: path (string, required); window (Window | null); "
        "tags (array of string | null); mode (string).\n"
        "Correct the arguments and call fetch_lines again (2 corrections left in this turn)."
    )
    assert "(1 correction left in this turn)" in corrective_message("t", problems, 1)
    assert "Expected arguments" not in corrective_message("t", problems, 1)


def test_the_last_correction_warns_that_the_next_ends_the_turn() -> None:
    message = corrective_message("fetch_lines", ["missing required argument 'path'"], 0)
    assert message.endswith(
        "No corrections are left in this turn: another call whose arguments do not fit ends "
        "the turn with an error. Call fetch_lines again only with arguments that fit."
    )


def test_a_problem_of_the_arguments_as_a_whole_says_so() -> None:
    schema = {"type": "object", "minProperties": 1, "dependentRequired": {"a": ["b"]}}
    assert validation_problems(schema, {}) == ["the arguments: {} should be non-empty"]
    # A message that does not start with the value is never cut, however long the value.
    assert validation_problems(schema, {"a": "x" * 100}) == [
        "the arguments: 'b' is a dependency of 'a'"
    ]


def test_unexpected_arguments_name_what_is_allowed() -> None:
    only_a = {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False}
    assert validation_problems(only_a, {"a": 1, "b": 2}) == ["unexpected argument 'b' (allowed: a)"]
    patterned = {
        "type": "object",
        "patternProperties": {"^x-": {}},
        "additionalProperties": False,
    }
    assert validation_problems(patterned, {"x-trace": 1, "b": 2}) == [
        "unexpected argument 'b' (allowed: none)"
    ]


def test_a_value_of_the_one_form_its_type_fits_gets_that_form_s_problem() -> None:
    schema = {
        "type": "object",
        "properties": {
            "x": {"anyOf": [{"type": "array", "uniqueItems": True}, {"type": "string"}]},
            "mode": {"enum": ["head", "tail"]},
        },
    }
    assert validation_problems(schema, {"x": [1, 1], "mode": "all"}) == [
        "argument 'mode': 'all' is not one of ['head', 'tail']",
        "argument 'x': [1, 1] has non-unique elements",
    ]


def test_a_value_that_fits_several_forms_by_type_lists_the_forms() -> None:
    either = {
        "anyOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}},
            {"type": "object", "properties": {"b": {"type": "integer"}}},
        ]
    }
    schema = {"type": "object", "properties": {"x": either, "n": {"oneOf": [{"type": "integer"}]}}}
    assert validation_problems(schema, {"x": {"a": "x", "b": "y"}, "n": None}) == [
        "argument 'n': None is not valid under any of the given schemas (expected integer)",
        "argument 'x': {'a': 'x', 'b': 'y'} is not valid under any of the given schemas "
        "(expected object | object)",
    ]


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ([], "[] is not of type 'object', 'boolean'"),
        ({"enum": {1}}, "TypeError: Object of type set is not JSON serializable"),
    ],
    ids=["not an object", "not JSON"],
)
def test_a_schema_that_cannot_be_read_is_one_problem(schema: Any, reason: str) -> None:
    assert validation_problems(schema, {}) == [
        f"the tool's input schema is itself invalid ({reason}), so no arguments can be checked "
        "against it; this is a fault of the tool, not of your arguments"
    ]


def test_a_long_reason_for_an_invalid_schema_is_cut_to_two_hundred_characters() -> None:
    missing = "#/$defs/" + "m" * 300
    [problem] = validation_problems({"$ref": missing}, {})
    reason = f"it refers to {missing!r}, which is not in it"
    assert problem.startswith(f"the tool's input schema is itself invalid ({reason[:199]}…), ")


def brief_of(schema: Any) -> str:
    """What the corrective message says a one-argument tool expects."""
    message = corrective_message("t", [], 1, schema={"properties": {"a": schema}})
    [expected] = [line for line in message.splitlines() if line.startswith("Expected")]
    return expected.removeprefix("Expected arguments: a (").removesuffix(").")


@pytest.mark.parametrize(
    ("schema", "brief"),
    [
        (True, "any value"),
        (False, "nothing"),
        (1, "nothing"),  # not a schema (the tool is told so): only `true` allows any value
        ({}, "any value"),
        ({"type": ["string", "null"]}, "string | null"),
        ({"type": "array"}, "array"),
        ({"type": "array", "items": {"$ref": "#/$defs/Row"}}, "array of Row"),
        ({"type": "string", "items": {"type": "integer"}}, "string"),  # items: arrays only
        # As an MCP server sends it: JSON, whose strings are not Python's literals.
        (json.loads('{"type": "array", "items": {"type": "string"}}'), "array of string"),
        ({"$ref": "#"}, "#"),
        ({"oneOf": [{"type": "integer"}, {"const": "all"}]}, 'integer | exactly "all"'),
        ({"enum": ["a", "b"]}, 'one of ["a", "b"]'),
    ],
)
def test_the_expected_arguments_say_each_form_in_a_few_words(schema: Any, brief: str) -> None:
    assert brief_of(schema) == brief


def test_a_long_list_of_allowed_values_is_cut_to_eighty_characters() -> None:
    exactly = ["v" * 76]  # ["vvv…"] is 80 characters of JSON
    assert brief_of({"enum": exactly}) == f"one of {json.dumps(exactly)}"
    longer = ["v" * 77]
    assert brief_of({"enum": longer}) == f"one of {json.dumps(longer)[:79]}…"


def test_expected_arguments_are_listed_only_when_the_schema_names_them() -> None:
    assert "Expected arguments: none." in corrective_message("t", [], 1, schema={"properties": {}})
    assert "Expected" not in corrective_message("t", [], 1, schema={"type": "object"})


def test_a_structured_answer_gets_at_most_ten_problems_each_cut_short() -> None:
    items = {"type": "array", "items": {"type": "string", "maxLength": 1}}
    problems = value_problems(items, list(range(12)))
    assert problems[:2] == [
        "at '[0]': 0 is not of type 'string'",
        "at '[10]': 10 is not of type 'string'",
    ]
    assert len(problems) == 10

    [long] = value_problems(items, ["x" * 300])
    assert long == "at '[0]': '" + "x" * 198 + "…"
    [whole] = value_problems({"type": "string", "maxLength": 1}, "x" * 300)
    assert whole == "'" + "x" * 198 + "…"


def test_a_structured_answer_checked_against_an_invalid_schema_says_so() -> None:
    [problem] = value_problems({"type": "strin"}, 1)
    assert problem.startswith(
        "the tool's input schema is itself invalid (SchemaError: 'strin' is not valid under any"
    )
