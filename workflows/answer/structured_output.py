"""`agent.output_schema`: the final answer must be JSON that fits it. The model is told so in
the system prompt; an answer that does not parse or fit goes back to it as a user message
saying what is wrong (seed 002's corrective feedback), bounded by `max_iterations`."""

from __future__ import annotations

import json
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.tool_validation import value_problems


def instruction(schema: dict[str, Any]) -> str:
    return (
        "Give your final answer as one JSON value, with no other text, that fits this JSON "
        f"Schema:\n{json.dumps(schema, ensure_ascii=False)}"
    )


def structured_answer(text: str, schema: dict[str, Any]) -> tuple[Any, str | None]:
    """The answer's JSON value, or None and the corrective message for the model."""
    try:
        value = json.loads(_without_fence(text))
    except json.JSONDecodeError as err:
        return None, _corrective([f"it is not JSON ({err.msg} at character {err.pos})"])
    problems = value_problems(schema, value)
    if problems:
        return None, _corrective(problems)
    return value, None


def _without_fence(text: str) -> str:
    # Models often wrap JSON in a markdown code fence even when told not to.
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```"):
        stripped = stripped[3:-3]
        stripped = stripped.removeprefix("json").strip()
    return stripped


def _corrective(problems: list[str]) -> str:
    listed = "\n".join(f"- {problem}" for problem in problems)
    return (
        "Your final answer does not fit the required output schema:\n"
        f"{listed}\nAnswer again with only the JSON value."
    )
