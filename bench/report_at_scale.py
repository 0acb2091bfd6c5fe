"""The rows of a run at scale, each beside its floor: the three goals at scale (a worker's RSS
with 1,000 turns parked, the wall of 1,000 concurrent turns, worker CPU per iteration), tighter
than the targets of `bench.report`, and the figures of the parked and long-turn sections, which
are reported without a target."""

from __future__ import annotations

from typing import Any

from bench.report import Row, _ratio, _verdict
from bench.sides import FLOOR, OURS

# The goals at scale, as ratios to the floor.
PARKED_RSS_GOAL = 1.3
LARGE_WALL_GOAL = 1.2
CPU_PER_ITER_GOAL = 1.2


def _row(figure: str, floor: float, ours: float, fmt: str, goal: float | None) -> Row:
    ratio = _ratio(floor, ours)
    shown = f"{ratio:.2f}×" if ratio is not None else "n/a"
    if goal is None:
        return (figure, format(floor, fmt), format(ours, fmt), shown, "report", "")
    ok = ratio is not None and ratio <= goal
    return (figure, format(floor, fmt), format(ours, fmt), shown, f"≤ {goal:g}×", _verdict(ok))


def scale_goal_rows(results: dict[str, Any]) -> list[Row]:
    """The three figures the goals at scale hold to the floor, from this run's sections."""
    rows: list[Row] = []
    parked = results.get("parked")
    if parked:
        figure = f"RSS MiB, {parked['n']} turns parked on an approval"
        rows.append(_goal_row(figure, parked, "rss_parked_mib", ".1f", PARKED_RSS_GOAL))
    large = results.get("concurrency_large")
    if large and FLOOR in large and OURS in large:
        figure = f"{large['n']} concurrent turns on one worker, wall s"
        rows.append(_goal_row(figure, large, "wall_s", ".2f", LARGE_WALL_GOAL))
    for row in results.get("overhead", []):
        figure = f"worker CPU ms per iteration (K={row['k']}, L={row['latency_ms']:g} ms)"
        rows.append(_goal_row(figure, row, "worker_cpu_ms_per_iter", ".1f", CPU_PER_ITER_GOAL))
    return rows


def _goal_row(figure: str, section: dict[str, Any], key: str, fmt: str, goal: float) -> Row:
    return _row(figure, section[FLOOR][key], section[OURS][key], fmt, goal)


def reported_scale_rows(results: dict[str, Any]) -> list[Row]:
    """The parked and long-turn sections' figures, reported without a target."""
    rows: list[Row] = []
    for key, label in (
        ("parked_large", "turns parked on an approval"),
        ("parked_transcript", "turns parked"),
        ("parked_encrypted", "turns parked on an approval, encrypted"),
        ("parked_session", "sessions parked on their first turn's approval"),
    ):
        if key in results:
            rows += _parked_rows(results[key], label)
    if "long_turn" in results:
        rows += _long_turn_rows(results["long_turn"])
    return rows


def _parked_rows(section: dict[str, Any], label: str) -> list[Row]:
    floor, ours = section[FLOOR], section[OURS]
    tag = f"{section['n']} {label}" + (
        f" after {section['k']} iterations" if section.get("k") else ""
    )
    return [
        _row(f"RSS MiB, {tag}", floor["rss_parked_mib"], ours["rss_parked_mib"], ".1f", None),
        _row(
            f"RSS growth KiB per parked turn, {tag}",
            floor["per_turn_kib"],
            ours["per_turn_kib"],
            ".1f",
            None,
        ),
        _row(f"time to park them all s, {tag}", floor["park_s"], ours["park_s"], ".1f", None),
    ]


def _long_turn_rows(section: dict[str, Any]) -> list[Row]:
    k, floor, ours = section["k"], section[FLOOR], section[OURS]
    tag = f"a {k}-iteration turn, L=0"
    return [
        _row(
            f"wall ms per iteration, {tag}",
            floor["wall_ms_per_iter"],
            ours["wall_ms_per_iter"],
            ".1f",
            None,
        ),
        _row(
            f"worker CPU ms per iteration, {tag}",
            floor["worker_cpu_ms_per_iter"],
            ours["worker_cpu_ms_per_iter"],
            ".1f",
            None,
        ),
        _row(
            f"dev-server CPU ms per iteration, {tag}",
            floor["server_cpu_ms_per_iter"],
            ours["server_cpu_ms_per_iter"],
            ".1f",
            None,
        ),
        _row(f"history KiB, all runs, {tag}", floor["total_kib"], ours["total_kib"], ".1f", None),
        (
            f"runs; KiB (events) per run, {tag}",
            _runs_cell(floor),
            _runs_cell(ours),
            "",
            "report",
            "",
        ),
    ]


def _runs_cell(side: dict[str, Any]) -> str:
    runs = ", ".join(
        f"{kib:g} ({events})"
        for kib, events in zip(side["run_kib"], side["run_events"], strict=True)
    )
    return f"{side['runs']}: {runs}"
