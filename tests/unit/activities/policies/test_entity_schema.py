"""`turnkeeper policy check`'s schema: our entities and context, each error at its policy's line;
attributes of `context.input` (each tool's own JSON) are not checked."""

from __future__ import annotations

from pathlib import Path

from turnkeeper.activities.policies.entity_schema import problems
from turnkeeper.activities.policies.policy_set import PolicySource

from tests.support.policy_files import POLICIES


def _problems(text: str) -> list[str]:
    return problems(PolicySource(Path("p.cedar"), text))


def test_the_shared_policies_fit() -> None:
    assert _problems(POLICIES) == []


def test_errors_name_the_line_of_their_policy() -> None:
    text = (
        "permit(principal, action, resource);\n\n"
        '@id("who")\npermit(principal == User::"x", action, resource);\n'
        'forbid(principal, action, resource) when { context.input.path like "*.env" };\n'
        "forbid(principal, action, resource) when { context.inptu has path };\n"
    )
    found = _problems(text)
    assert found[0] == "p.cedar:3: unrecognized entity type `User`"
    assert found[-1] == 'p.cedar:6: attribute `inptu` in context for Action::"call" not found'
    assert not any(":5:" in line for line in found)


def test_a_syntax_error_is_reported_alone() -> None:
    assert _problems("permit(principal, action, resource)\nwhen { context.x == };") == [
        "p.cedar:2: unexpected token `}`"
    ]
