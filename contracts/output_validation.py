"""What crosses the `validate_output` activity: the turn's final answer, the names of the output
validators that check it, and the first rejection. The validators themselves are user code and
live on the worker (`activities/output/`); the workflow only knows their names."""

from __future__ import annotations

from pydantic import Field, JsonValue
from turnkeeper.contracts.activity_io import CompactModel
from turnkeeper.contracts.claim_check import ClaimChecked


class FinalAnswer(CompactModel, ClaimChecked):
    """The model's final answer, as validators read it."""

    text: str
    """The answer's text."""
    structured: bool = False
    """The agent has an `output_schema`: `structured_output` holds the answer's JSON value."""
    structured_output: JsonValue = None
    """With `structured`: the answer's JSON value, which fits the schema."""


class ValidateOutputInput(CompactModel, ClaimChecked):
    """The `validate_output` activity's input."""

    validators: list[str] = Field(default_factory=list)
    """`agent.output_validators`: run in this order, stopping at the first rejection."""
    answer: FinalAnswer | None = None
    """The answer to check. None: only check that the worker has every validator (at the start
    of the turn)."""


class ValidateOutputResult(CompactModel):
    """The `validate_output` activity's result: accepted, or the first rejection."""

    rejected_by: str | None = None
    """The validator that rejected the answer; None: every validator accepted it."""
    reason: str = ""
    """Why, in the validator's words (`OutputRejected("…")`): sent back to the model."""
