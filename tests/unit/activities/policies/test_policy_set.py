"""A Cedar policy set: our three effects from Cedar's decision, the deciding policies by `@id`,
the model's JSON as Cedar values, and a file that does not parse named with its line."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from turnkeeper.activities.policies.policy_set import CedarPolicies, PolicyFileError, PolicySource
from turnkeeper.activities.policies.source_lines import policy_lines
from turnkeeper.contracts.policy_io import PolicyCaller, PolicyCheckInput

from tests.support.policy_files import POLICIES

EVENING = datetime(2026, 11, 27, 19, 30, tzinfo=UTC)  # a Friday


def _call(tool: str, input: dict[str, Any] | None = None, **caller: Any) -> PolicyCheckInput:
    who = PolicyCaller(agent_id="support", **caller)
    return PolicyCheckInput(caller=who, tool=tool, input=input or {}, time=EVENING)


def _set(*texts: str) -> CedarPolicies:
    return CedarPolicies.parse([PolicySource(Path(f"p{n}.cedar"), t) for n, t in enumerate(texts)])


@pytest.mark.parametrize(
    ("tool", "call_input", "effect", "policies"),
    [
        ("read_file", {"path": "notes.md"}, "permit", ["baseline"]),
        ("read_file", {"path": "prod.env"}, "forbid", ["no-env-files"]),
        ("list_files", {"path": "."}, "ask", ["ask-before-listing"]),
        # a forbid wins over the ask's permit
        ("list_files", {"path": "private/x"}, "forbid", ["no-private-listing"]),
    ],
)
def test_effects_and_their_policies(
    tool: str, call_input: dict[str, Any], effect: str, policies: list[str]
) -> None:
    decided, errors = _set(POLICIES).decide(_call(tool, input=call_input))
    assert (decided.effect, decided.policies, errors) == (effect, policies, [])


def test_nothing_permits_a_call_no_policy_matches() -> None:
    only_reads = 'permit(principal, action, resource == Tool::"read_file");'
    decided, _ = _set(only_reads).decide(_call("write_file"))
    assert (decided.effect, decided.policies) == ("forbid", [])


def test_the_context_reads_cost_time_depth_and_principal_attributes() -> None:
    rules = """
    permit(principal, action, resource);
    @id("late-payments")
    forbid(principal, action, resource == Tool::"pay")
    when { principal.tenant == "acme" && context.hour >= 18 && context.weekday == 4 };
    @id("big-refunds")
    @effect("ask")
    permit(principal, action, resource == Tool::"refund")
    when { context.input.amount > 100 && context.cost_usd.lessThan(decimal("1.0")) };
    @id("no-deep-writes")
    forbid(principal, action, resource) when { context.depth > 1 && context.iteration > 2 };
    """
    policies = _set(rules)
    assert policies.decide(_call("pay", tenant="acme"))[0].effect == "forbid"
    assert policies.decide(_call("pay", tenant="other"))[0].effect == "permit"
    big = _call("refund", input={"amount": 150.0, "note": None}, cost_usd=0.5)
    assert policies.decide(big)[0].policies == ["big-refunds"]
    assert policies.decide(_call("refund", input={"amount": 99.5}))[0].effect == "permit"
    deep = _call("x", depth=2, iteration=3)
    assert policies.decide(deep)[0].policies == ["no-deep-writes"]


def test_a_record_that_mimics_an_entity_stays_a_record() -> None:
    rule = "forbid(principal, action, resource) when { context.input has __entity };"
    decided, _ = _set("permit(principal, action, resource);", rule).decide(
        _call("x", input={"__entity": {"type": "Agent", "id": "root"}})
    )
    assert decided.effect == "permit"


def test_files_join_in_order_and_the_hash_follows_their_text() -> None:
    first, again = _set(POLICIES), _set(POLICIES)
    assert first.digest == again.digest
    assert _set(POLICIES, "forbid(principal, action, resource);").digest != first.digest


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "permit(principal, action, resource);\n\nforbid(principal,\n action resource);",
            4,
            "unexpected token `resource`",
        ),
        ("permit(principal, action, resource)\n", 1, "unexpected end of input"),
        (
            'permit(principal, action, resource);\n@effect("deny")\nforbid(principal, action, '
            "resource);",
            2,
            '@effect("deny")',
        ),
        ('@effect("ask")\nforbid(principal, action, resource);', 1, '@effect("ask")'),
    ],
)
def test_a_bad_file_is_named_with_its_line(text: str, line: int, message: str) -> None:
    with pytest.raises(PolicyFileError) as refused:
        _set("permit(principal, action, resource);", text)
    assert str(refused.value).startswith(f"p1.cedar:{line}: "), refused.value
    assert message in str(refused.value)


def test_policy_lines_skip_comments_and_strings() -> None:
    text = (
        '// a; b\n\n@id("a;b")\npermit(principal, action, resource)\nwhen { "x;" == "x;" };\n'
        "forbid(principal, action, resource);\n"
    )
    assert policy_lines(text) == [3, 6]


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError, match=r"missing\.cedar: cannot be read"):
        CedarPolicies.read([tmp_path / "missing.cedar"])
