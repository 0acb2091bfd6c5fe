"""The pure parts of scheduled turns (contracts/schedules.py): `--every` read and written back,
schedule names, and the run ids no caller may take."""

from __future__ import annotations

from datetime import timedelta

import pytest
from turnkeeper.contracts.schedules import (
    InvalidSchedule,
    every_text,
    parse_every,
    run_id_base,
    schedule_name_problem,
)
from turnkeeper.contracts.turn_ids import TURN_ID_MAX_CHARS, turn_id_problem


@pytest.mark.parametrize(
    ("text", "seconds", "written"),
    [
        ("1s", 1, "1s"),
        ("90s", 90, "1m30s"),
        ("1h30m", 5_400, "1h30m"),
        (" 7D ", 604_800, "7d"),
        ("2w", 1_209_600, "14d"),
        ("1d2h3m4s", 93_784, "1d2h3m4s"),
    ],
)
def test_an_interval_is_read_and_written_back(text: str, seconds: int, written: str) -> None:
    every = parse_every(text)
    assert every == timedelta(seconds=seconds)
    assert every_text(every) == written and parse_every(written) == every


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "not a duration"),
        ("weekly", "not a duration"),
        ("1.5h", "not a duration"),
        ("-1h", "not a duration"),
        ("1h 30m", "not a duration"),
        ("0s", "at most once a second"),
    ],
)
def test_a_bad_interval_says_what_to_write(text: str, says: str) -> None:
    with pytest.raises(InvalidSchedule, match=says) as refused:
        parse_every(text)
    assert str(refused.value).startswith(f"--every {text!r}")


def test_a_name_is_one_path_segment_and_its_runs_stay_turn_ids() -> None:
    longest = "n" * 150
    assert schedule_name_problem("ticket-digest_2.weekly") is None
    assert schedule_name_problem(longest) is None
    for bad in ("", "-lead", "a/b", "a b", "a:b", "n" * 151, "é"):
        assert schedule_name_problem(bad) is not None, bad
    run = f"{run_id_base(longest)}-2026-11-29T11:12:21Z"
    assert len(run) <= TURN_ID_MAX_CHARS


def test_no_caller_may_start_a_turn_at_a_schedules_run_id() -> None:
    problem = turn_id_problem("schedule:weekly-2026-11-29T11:12:21Z")
    assert problem is not None and "runs of scheduled turns" in problem
    assert turn_id_problem("schedules-weekly") is None  # only the prefix is the runtime's
