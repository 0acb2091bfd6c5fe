"""The chaos matrix as a table."""

from __future__ import annotations

from bench.chaos.properties import RowResult

HEADER = (
    "fault",
    "turns",
    "completed",
    "failed typed",
    "stuck",
    "billed / counted calls",
    "dup. effects",
    "sent in an outage / lost",
    "faults",
    "phases hit",
    "wall s",
)


def table(rows: list[RowResult]) -> str:
    """A Markdown table, one line per row, as the README shows it."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for row in rows:
        billed = sum(v.billed for v in row.verdicts)
        counted = sum(v.counted for v in row.verdicts)
        retried = sum(v.sends_in_outage for v in row.verdicts)
        lost = sum(v.sends_lost for v in row.verdicts)
        hits = ", ".join(f"{name} {n}" for name, n in sorted(row.hits.items())) or "-"
        cells = (
            row.fault,
            str(len(row.verdicts)),
            str(row.completed),
            str(row.failed_typed),
            str(row.stuck),
            f"{billed} / {counted}",
            str(sum(v.duplicates for v in row.verdicts)),
            f"{retried} / {lost}",
            str(row.faults_injected),
            hits,
            f"{row.wall_s:.0f}",
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
