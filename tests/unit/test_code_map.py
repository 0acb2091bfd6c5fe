"""tests/README.md's map from modules to tests follows the code: a module added, moved or renamed
without `python -m tests.code_map` fails here, so the map a newcomer reads is never stale."""

from __future__ import annotations

from tests.code_map import README, found_tests, modules, with_map


def test_the_readme_map_is_the_one_the_code_gives() -> None:
    written = README.read_text(encoding="utf-8")

    assert with_map(written) == written, "the map is stale: run `python -m tests.code_map`"


def test_a_module_s_mirror_in_the_fast_tier_is_found_first() -> None:
    found = found_tests(modules())

    budgets = "turnkeeper.workflows.budgets.checks"
    assert str(found[budgets][0]) == "tests/unit/workflows/budgets/test_checks.py"
