"""The markdown tables of a bench run: every figure for the floor and for us, their ratio, its
target (history, overhead, worker CPU, concurrency, parked RSS) and whether we meet it."""

from __future__ import annotations

import statistics
from typing import Any

from bench.sides import FLOOR, OURS

KIB = 1024
MODEL_INPUT_LIMIT = 64 * KIB
PAYLOAD_WARN = 512 * KIB

Row = tuple[str, str, str, str, str, str]


def _ratio(floor: float, ours: float) -> float | None:
    return ours / floor if floor else None


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "**MISS**"


def _ratio_row(figure: str, floor: float, ours: float, limit: float, fmt: str) -> Row:
    ratio = _ratio(floor, ours)
    shown = f"{ratio:.2f}×" if ratio is not None else "n/a"
    ok = ratio is not None and ratio <= limit
    return (figure, format(floor, fmt), format(ours, fmt), shown, f"≤ {limit:g}×", _verdict(ok))


def summary_rows(results: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    if "history" in results:
        rows += _history_rows(results["history"])
    for row in results.get("overhead", []):
        rows += _overhead_rows(row)
    if "concurrency" in results:
        rows += _concurrency_rows(results["concurrency"], 1.2)
    if "concurrency_large" in results:
        rows += _concurrency_rows(results["concurrency_large"], None)
    if "parked" in results:
        rows += _parked_rows(results["parked"])
    return rows


def _history_rows(history: dict[str, Any]) -> list[Row]:
    rows = []
    for floor, ours in zip(history[FLOOR], history[OURS], strict=True):
        rows.append(
            _ratio_row(
                f"history KiB, K={floor['k']}",
                floor["total_bytes"] / KIB,
                ours["total_bytes"] / KIB,
                1.5,
                ".1f",
            )
        )
    increments = history.get("increment_ratio")
    if increments:
        ours_ratio = increments[OURS]
        rows.append(
            (
                "history growth Δ(30→50)/Δ(10→30)",
                f"{increments[FLOOR]:.3f}",
                f"{ours_ratio:.3f}",
                "",
                "1 ± 0.1",
                _verdict(abs(ours_ratio - 1) <= 0.1),
            )
        )
    floor_max = max(s["model_input_bytes_max"] for s in history[FLOOR])
    ours_max = max(s["model_input_bytes_max"] for s in history[OURS])
    rows.append(
        (
            "largest model-call input, bytes (all K)",
            str(floor_max),
            str(ours_max),
            "",
            "≤ 65536",
            _verdict(ours_max <= MODEL_INPUT_LIMIT),
        )
    )
    rows.append(_warning_row(history))
    return rows


def _warning_row(history: dict[str, Any]) -> Row:
    """The largest K's turn: no history-limit warning from the server, no payload-size warning
    from the SDK, no payload over the SDK's 512 KiB warning limit."""
    floor, ours = history[FLOOR][-1], history[OURS][-1]
    limits = history["run_limits"][OURS]
    ok = (
        not history["server_limit_warnings"]
        and not ours["sdk_warnings"]
        and ours["largest_payload_bytes"] <= PAYLOAD_WARN
        and limits["largest_run_bytes"] < limits["size_warn_bytes"]
        and limits["largest_run_events"] < limits["count_warn_events"]
    )
    return (
        f"K={ours['k']} turn: warnings (server + SDK), largest payload KiB, runs",
        _warning_cell(floor, []),
        _warning_cell(ours, history["server_limit_warnings"]),
        "",
        "none, ≤ 512 KiB",
        _verdict(ok),
    )


def _warning_cell(stats: dict[str, Any], server_warnings: list[str]) -> str:
    count = len(stats["sdk_warnings"]) + len(server_warnings)
    return f"{count}, {stats['largest_payload_bytes'] / KIB:.0f}, {stats['runs']}"


def _overhead_rows(row: dict[str, Any]) -> list[Row]:
    k, latency = row["k"], row["latency_ms"]
    floor, ours = row[FLOOR], row[OURS]
    tag = f"K={k}, L={latency:g} ms, {row['reps']} reps"
    server_ratio = _ratio(floor["server_cpu_ms_per_iter"], ours["server_cpu_ms_per_iter"])
    return [
        _ratio_row(
            f"overhead ms/iter ({tag})",
            floor["overhead_ms_per_iter"],
            ours["overhead_ms_per_iter"],
            1.25,
            ".1f",
        ),
        _ratio_row(
            f"worker CPU ms/iter ({tag})",
            floor["worker_cpu_ms_per_iter"],
            ours["worker_cpu_ms_per_iter"],
            1.5,
            ".1f",
        ),
        (
            f"dev-server CPU ms/iter ({tag})",
            f"{floor['server_cpu_ms_per_iter']:.1f}",
            f"{ours['server_cpu_ms_per_iter']:.1f}",
            f"{server_ratio:.2f}×" if server_ratio else "n/a",
            "report",
            "",
        ),
    ]


def _cpu_s(side: dict[str, Any]) -> float:
    """Median worker + server CPU seconds of a side's runs: steadier than wall on a shared host."""
    return statistics.median(run["worker_cpu_s"] + run["server_cpu_s"] for run in side["runs"])


def _concurrency_rows(section: dict[str, Any], limit: float | None) -> list[Row]:
    tag = f"{section['n']} turns, K={section['k']}, L={section['latency_ms']:g} ms"
    floor = section.get(FLOOR, {}).get("wall_s")
    ours = section[OURS]["wall_s"]
    if limit is not None and floor is not None:
        floor_cpu, ours_cpu = _cpu_s(section[FLOOR]), _cpu_s(section[OURS])
        return [
            _ratio_row(f"concurrent wall s ({tag})", floor, ours, limit, ".2f"),
            (
                f"worker + server CPU s ({tag})",
                f"{floor_cpu:.1f}",
                f"{ours_cpu:.1f}",
                f"{ours_cpu / floor_cpu:.2f}×",
                "report",
                "",
            ),
        ]
    ratio = _ratio(floor, ours) if floor else None
    return [
        (
            f"concurrent wall s ({tag})",
            f"{floor:.2f}" if floor else "not run",
            f"{ours:.2f}",
            f"{ratio:.2f}×" if ratio else "",
            "all complete",
            "PASS",
        )
    ]


def _parked_rows(section: dict[str, Any]) -> list[Row]:
    floor, ours = section[FLOOR], section[OURS]
    n = section["n"]
    per_turn = _ratio(floor["per_turn_kib"], ours["per_turn_kib"])
    idle = _ratio(floor["rss_idle_mib"], ours["rss_idle_mib"])
    return [
        _ratio_row(
            f"worker RSS MiB, {n} parked",
            floor["rss_parked_mib"],
            ours["rss_parked_mib"],
            1.5,
            ".1f",
        ),
        (
            "worker RSS MiB, idle (before any turn)",
            f"{floor['rss_idle_mib']:.1f}",
            f"{ours['rss_idle_mib']:.1f}",
            f"{idle:.2f}×" if idle else "n/a",
            "report",
            "",
        ),
        (
            f"RSS growth KiB per parked turn ({n})",
            f"{floor['per_turn_kib']:.1f}",
            f"{ours['per_turn_kib']:.1f}",
            f"{per_turn:.2f}×" if per_turn else "n/a",
            "report",
            "",
        ),
        *_same_shape_rows(section),
    ]


def _same_shape_rows(section: dict[str, Any]) -> list[Row]:
    """Against a floor that parks as a turn does (a model call, then a wait with a timeout)."""
    shaped, ours = section.get("floor_same_shape"), section[OURS]
    if shaped is None:
        return []
    per_turn = _ratio(shaped["per_turn_kib"], ours["per_turn_kib"])
    return [
        (
            f"worker RSS MiB, {section['n']} parked, floor of the same shape",
            f"{shaped['rss_parked_mib']:.1f}",
            f"{ours['rss_parked_mib']:.1f}",
            f"{ours['rss_parked_mib'] / shaped['rss_parked_mib']:.2f}×",
            "report",
            "",
        ),
        (
            "RSS growth KiB per parked turn, floor of the same shape",
            f"{shaped['per_turn_kib']:.1f}",
            f"{ours['per_turn_kib']:.1f}",
            f"{per_turn:.2f}×" if per_turn else "n/a",
            "report",
            "",
        ),
    ]


def markdown(rows: list[Row]) -> str:
    lines = [
        "| figure | floor | turnkeeper | ratio | target | verdict |",
        "|---|---:|---:|---:|---|---|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def history_detail(history: dict[str, Any]) -> str:
    """Where the bytes are: model inputs, tool results and the rest, per K and side."""
    lines = [
        "| side | K | runs | events | total KiB | model inputs KiB (first → last B) | "
        "tool results KiB | other KiB | of which workflow result KiB |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for side in (FLOOR, OURS):
        for s in history[side]:
            lines.append(
                f"| {side} | {s['k']} | {s['runs']} | {s['events']} | "
                f"{s['total_bytes'] / KIB:.1f} | {s['model_input_bytes_sum'] / KIB:.1f} "
                f"({s['model_input_bytes_first']} → {s['model_input_bytes_last']}) | "
                f"{s['tool_result_bytes'] / KIB:.1f} | {s['other_bytes'] / KIB:.1f} | "
                f"{s['workflow_result_bytes'] / KIB:.1f} |"
            )
    return "\n".join(lines)


def per_iteration_detail(history: dict[str, Any]) -> str:
    """Events and bytes that one more iteration adds, by event type, for both sides."""
    table = history["per_iteration"]
    low, high = table["between_k"]
    kinds = sorted(set(table[FLOOR]) | set(table[OURS]))
    lines = [
        f"Per iteration (difference of the K={low} and K={high} turns):",
        "",
        "| event type | floor events/iter | turnkeeper events/iter | floor B/iter | "
        "turnkeeper B/iter |",
        "|---|---:|---:|---:|---:|",
    ]
    zero = {"events": 0.0, "bytes": 0.0}
    for kind in kinds:
        floor, ours = table[FLOOR].get(kind, zero), table[OURS].get(kind, zero)
        lines.append(
            f"| {kind} | {floor['events']:.2f} | {ours['events']:.2f} | "
            f"{round(floor['bytes'])} | {round(ours['bytes'])} |"
        )
    total_floor = sum(v["bytes"] for v in table[FLOOR].values())
    total_ours = sum(v["bytes"] for v in table[OURS].values())
    lines.append(f"| **all** | | | {total_floor:.0f} | {total_ours:.0f} |")
    return "\n".join(lines)


def per_iteration_fields_detail(history: dict[str, Any], top: int = 12) -> str:
    """The event fields that grow most per iteration, for each side."""
    table = history["per_iteration_fields"]
    lines = [
        "Largest per-iteration growth by event field (B/iter):",
        "",
        "| floor field | B/iter | turnkeeper field | B/iter |",
        "|---|---:|---|---:|",
    ]
    floor, ours = table[FLOOR][:top], table[OURS][:top]
    for index in range(max(len(floor), len(ours))):
        left = floor[index] if index < len(floor) else ("", None)
        right = ours[index] if index < len(ours) else ("", None)
        lines.append(
            f"| {left[0]} | {'' if left[1] is None else round(left[1])} | "
            f"{right[0]} | {'' if right[1] is None else round(right[1])} |"
        )
    return "\n".join(lines)
