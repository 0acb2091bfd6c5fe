"""`agent.guardrails` in the request: both forms, one entry per name, a known mode, and a
request without guardrails serialized as before (an older worker refuses unknown fields)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from turnkeeper.contracts.guardrails import GuardrailRef
from turnkeeper.contracts.turn import AgentSpec

AGENT = {"id": "a", "model": "anthropic:claude-sonnet-4-6"}


def test_both_forms_read_as_long_ones() -> None:
    agent = AgentSpec.model_validate(
        {**AGENT, "guardrails": ["secrets", {"name": "size_cap", "mode": "log_only"}]}
    )

    assert agent.guardrail_refs() == [
        GuardrailRef(name="secrets", mode="enforce"),
        GuardrailRef(name="size_cap", mode="log_only"),
    ]


@pytest.mark.parametrize(
    ("guardrails", "problem"),
    [
        (
            ["secrets", {"name": "secrets", "mode": "log_only"}],
            "names the guardrail 'secrets' twice",
        ),
        ([{"name": "secrets", "mode": "shadow"}], "'enforce' or 'log_only'"),
        ([""], "a guardrail's name is empty"),
    ],
)
def test_bad_entries_are_refused(guardrails: list[object], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        AgentSpec.model_validate({**AGENT, "guardrails": guardrails})


def test_an_agent_without_guardrails_serializes_as_before() -> None:
    assert "guardrails" not in AgentSpec.model_validate(AGENT).model_dump()
