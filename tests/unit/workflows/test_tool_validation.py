"""Checking a tool call's arguments against its schema, in words the model can act on: pure
functions, no server (tests/workflows/test_tool_validation.py runs them in the sandbox)."""

from __future__ import annotations

import socket
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field
from turnkeeper.activities.tools.registry import worker_tool
from turnkeeper.workflows.tool_validation import (
    MAX_PROBLEMS,
    corrective_message,
    schema_problem,
    validation_problems,
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


def test_a_long_bad_value_is_not_echoed_back_whole() -> None:
    [problem] = validation_problems(SCHEMA, {"path": "a", "tags": "x" * 10_000})
    assert problem.startswith("argument 'tags': 'xxxx")
    assert "…" in problem and len(problem) < 200


def test_a_flood_of_problems_is_cut_to_a_readable_list() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "array", "items": {"type": "string"}}}}
    problems = validation_problems(schema, {"n": list(range(50))})
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1] == f"and {50 - MAX_PROBLEMS} more problems of the same kinds"


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
