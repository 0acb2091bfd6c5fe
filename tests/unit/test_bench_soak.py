"""The soak's verdict (bench/soak.py): a worker whose RSS grows with the turns it runs fails it,
one whose RSS only wanders does not, and a failed turn or a series too short fails it too."""

from __future__ import annotations

from bench.soak import Sample, slope_per_1000_turns, verdict


def series(per_turn_kib: float, *, noise_mib: float = 0.0, samples: int = 40) -> list[Sample]:
    """A soak of 25 turns per sample on a worker starting at 120 MiB."""
    points = []
    for index in range(samples):
        turns = 25 * index
        wander = noise_mib if index % 2 else -noise_mib
        rss = 120 + turns * per_turn_kib / 1024 + wander
        points.append(Sample(index * 3.0, turns, rss, 300.0, turns * 0.03, turns * 70, 0.0, 1.0))
    return points


def test_the_slope_is_mib_per_thousand_turns() -> None:
    assert round(slope_per_1000_turns(series(per_turn_kib=2.0)), 3) == round(2000 / 1024, 3)


def test_a_worker_that_keeps_ten_kib_a_turn_leaks() -> None:
    judged = verdict(series(per_turn_kib=10.0), [], max_slope_mib=5.0)

    assert judged["rss_slope_mib_per_1000_turns"] > 9
    assert not judged["flat"] and not judged["holds"]


def test_a_worker_whose_memory_only_wanders_is_flat() -> None:
    judged = verdict(series(per_turn_kib=0.0, noise_mib=1.5), [], max_slope_mib=5.0)

    assert judged["flat"] and judged["holds"]
    assert judged["second_half_turns"] == 25 * 19


def test_a_failed_turn_fails_the_soak_however_flat() -> None:
    judged = verdict(series(per_turn_kib=0.0), ["turn-1: RuntimeError: stuck"], max_slope_mib=5.0)

    assert judged["flat"] and not judged["holds"]


def test_a_soak_without_turns_in_its_second_half_proves_nothing() -> None:
    stalled = [Sample(float(t), 10, 120.0, 300.0, 0.1, 700, 0.0, 1.0) for t in range(10)]

    assert not verdict(stalled, [], max_slope_mib=5.0)["holds"]
