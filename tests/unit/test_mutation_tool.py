"""The mutation check's own parts (docs/mutation-testing.md): the operator it adds to cosmic-ray,
and which mutants of a module it counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from cosmic_ray.mutating import mutate_code
from cosmic_ray.work_db import WorkDB, use_db

from tests.mutation.__main__ import _parser, _settings
from tests.mutation.config import Equivalent, load
from tests.mutation.mutants import new_session
from tests.mutation.operators import ReplaceAugmentedAssignment

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("occurrence", "mutated"),
    [(0, "total = x\nok = a <= b\n"), (1, "total -= x\nok = a <= b\n"), (2, None)],
)
def test_an_augmented_assignment_becomes_a_plain_one_and_its_opposite(
    occurrence: int, mutated: str | None
) -> None:
    code = "total += x\nok = a <= b\n"
    assert mutate_code(code, ReplaceAugmentedAssignment(), occurrence) == mutated


MODULE = """\
from __future__ import annotations


def grow(limit: int | None, added: int) -> int | None:
    total = 0
    total += added
    return None if limit is None else limit + total


def größenänderungsüberprüfung(limit: int | None) -> int:  # columns count characters, not bytes
    return 0 if limit is None else limit * 2
"""


def test_annotations_and_listed_equivalents_are_not_counted(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(MODULE, encoding="utf-8")
    listed = Equivalent("total = 0", "total = 1", "why")
    stale = Equivalent("gone = 1", "gone = 2", "why")

    with use_db(str(tmp_path / "session.sqlite"), WorkDB.Mode.create) as db:
        session = new_session(module, db, [listed, stale])

    tested = {(m.before, m.after) for m in session.to_test}
    assert {m.line for m in session.in_annotations} == {4, 10}
    assert ("return 0 if limit is None else limit * 2",
            "return 0 if limit is None else limit / 2") in tested  # fmt: skip
    assert [(m.before, m.after) for m, _ in session.equivalent] == [("total = 0", "total = 1")]
    assert session.unmatched == [stale]
    assert ("total += added", "total = added") in tested
    assert ("return None if limit is None else limit + total",
            "return None if limit is None else limit - total") in tested  # fmt: skip
    assert all(m.line not in (4, 10) for m in session.to_test)


def test_every_module_under_the_check_exists_and_lists_tests_that_exist() -> None:
    config = load()
    for path, module in config.modules.items():
        assert (ROOT / path).is_file(), path
        assert module.threshold >= 90, path
        assert all((ROOT / test).exists() for test in module.tests), path


def test_every_equivalent_mutant_is_explained_in_the_docs() -> None:
    page = (ROOT / "docs" / "mutation-testing.md").read_text(encoding="utf-8")
    for path, module in load().modules.items():
        for entry in module.equivalent:
            shown = f"`{entry.after}`" if entry.after else f"`{entry.before}` removed"
            assert shown in page, f"{path}: {shown} is not in docs/mutation-testing.md"


def test_fast_tier_puts_the_given_tests_in_the_tiers_place_for_one_run() -> None:
    own = "tests/unit/workflows/fleet/test_rate_window.py"
    args = _parser().parse_args(["workflows/fleet/rate_window.py", "--fast-tier", own])
    assert args.modules == ["workflows/fleet/rate_window.py"]
    settings = _settings(args)
    assert settings.fast_tier == [own]
    assert settings.modules == load().modules
    assert _settings(_parser().parse_args(["workflows/fleet/rate_window.py"])).fast_tier == [
        "tests/unit"
    ]
