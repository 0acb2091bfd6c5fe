"""Fuzzed bad input through the pure functions that read it: every case ends in a typed error
or a handled result, never an unexpected exception (which, in workflow code, would fail
workflow tasks in a loop; in an activity, it would be a TurnInternalError)."""

from __future__ import annotations

import contextlib
from typing import Any

from anthropic._models import construct_type
from anthropic.types import Message as SdkMessage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.types import CallToolResult
from pydantic import ValidationError
from turnkeeper.activities.mcp.results import compact_json, result_text
from turnkeeper.activities.providers.anthropic_provider import _from_sdk_response
from turnkeeper.activities.providers.provider import ModelCallError, ModelResponse
from turnkeeper.contracts.request_checks import request_problem
from turnkeeper.contracts.result_limits import capped
from turnkeeper.contracts.signals import ApproveInput, SubmitToolResultInput
from turnkeeper.contracts.tool_validation import validation_problems
from turnkeeper.contracts.turn import TurnRequest
from turnkeeper.workflows.failures import describe, invalid_request

from tests.support.strategies import deeply_nested, json_values, request_like, surrogate_text

MANY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@MANY
@given(request_like() | json_values())
def test_any_request_json_validates_or_gets_a_typed_refusal(payload: Any) -> None:
    try:
        request = TurnRequest.model_validate(payload)
    except ValidationError as err:
        failure = invalid_request(payload, describe(err))
        assert failure.type == "InvalidTurnRequest"
        assert failure.message.startswith("invalid turn request: ")
        return
    problem = request_problem(request)
    assert problem is None or isinstance(problem, str)


@MANY
@given(json_values())
def test_any_signal_payload_validates_or_is_refused(payload: Any) -> None:
    for model in (ApproveInput, SubmitToolResultInput):
        with contextlib.suppress(ValidationError):
            model.model_validate(payload)


SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "count": {"type": "integer", "minimum": 0}},
    "required": ["path"],
    "additionalProperties": False,
}


@MANY
@given(st.dictionaries(st.text(max_size=10), json_values(), max_size=6))
def test_any_tool_arguments_get_a_list_of_problems(arguments: dict[str, Any]) -> None:
    problems = validation_problems(SCHEMA, arguments)
    assert all(isinstance(problem, str) for problem in problems)


def _read(value: Any) -> ModelResponse | None:
    message = construct_type(type_=SdkMessage, value=value)
    try:
        return _from_sdk_response(message)  # type: ignore[arg-type]
    except ModelCallError as err:
        assert err.error_type in {"LLMTransient", "LLMContentFiltered", "LLMContextTooLong",
                                  "LLMInvalidRequest"}  # fmt: skip
        return None


MESSAGE_KEYS = st.sampled_from(
    ["id", "type", "role", "model", "content", "stop_reason", "usage", "input_tokens",
     "output_tokens", "text", "name", "input", "cache_read_input_tokens"]
)  # fmt: skip


MESSAGE_LIKE = st.recursive(
    st.none() | st.integers() | st.text(max_size=20) | st.booleans(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(MESSAGE_KEYS, children, max_size=7)
    ),
    max_leaves=40,
)


@MANY
@given(MESSAGE_LIKE | json_values())
def test_a_provider_answer_of_the_wrong_shape_is_a_classified_failure(value: Any) -> None:
    _read(value)


def test_a_huge_or_deeply_nested_provider_answer_is_a_classified_failure() -> None:
    assert _read(deeply_nested(5000)) is None
    huge = {"type": "message", "content": [{"type": "text", "text": "x"}] * 100_000}
    _read(huge)
    usage_without_input_tokens = {
        "id": "m", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
        "usage": {"output_tokens": 3},
    }  # fmt: skip
    _read(usage_without_input_tokens)


@MANY
@given(surrogate_text() | st.text(), st.integers(min_value=1024, max_value=4096))
def test_tool_output_with_invalid_utf8_is_capped_into_valid_utf8(text: str, limit: int) -> None:
    shown = capped(text, limit)
    shown.encode("utf-8", "surrogatepass")


@MANY
@given(
    st.lists(
        st.fixed_dictionaries({"type": st.just("text"), "text": surrogate_text() | st.text()})
        | st.fixed_dictionaries(
            {"type": st.just("image"), "data": st.text(max_size=8), "mimeType": st.text(max_size=8)}
        ),
        max_size=4,
    ),
    json_values() | st.none(),
    st.booleans(),
)
def test_any_mcp_tool_result_becomes_text(content: list[Any], structured: Any, error: bool) -> None:
    try:
        result = CallToolResult.model_validate(
            {"content": content, "structuredContent": structured, "isError": error}
        )
    except ValidationError:
        return
    text, is_error = result_text("tool", result)

    texts = [block["text"] for block in content if block["type"] == "text"]
    refusals = [
        f"[MCP tool 'tool' returned image ({block['mimeType']}), which cannot be shown to the "
        "model]"
        for block in content
        if block["type"] == "image"
    ]
    if texts:
        # Text is what the model reads, as sent (JSON-looking text is compacted, so not compared).
        if not any(block.strip().startswith(("{", "[")) for block in texts):
            assert text == "\n".join(texts + refusals)
        assert text.endswith("\n".join(refusals)) and is_error == error
    elif structured is not None:
        assert text == "\n".join([compact_json(structured), *refusals]) and is_error == error
    elif refusals:
        # Nothing the model can read: an error result, so it knows it saw nothing.
        assert (text, is_error) == ("\n".join(refusals), True)
    else:
        assert (text, is_error) == ("", error)
