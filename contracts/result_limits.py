"""How large a tool result may be, and how a larger one is cut: pure functions, so the workflow
can cap the results that external tools submit by signal the same way the tool activity caps
the results of worker tools."""

from __future__ import annotations

from typing import Final

DEFAULT_MAX_RESULT_BYTES: Final = 64 * 1024
MIN_RESULT_BYTES: Final = 1024  # room for a useful answer and the truncation marker
# JSON escaping can make a result up to six times longer (control characters become \u00XX):
# this bound keeps the activity result's worst case (1.5 MiB) under Temporal's 2 MiB limit.
MAX_RESULT_BYTES: Final = 256 * 1024


def capped(text: str, max_bytes: int) -> str:
    """`text` if its UTF-8 fits in `max_bytes`; else its beginning, cut on a character
    boundary, and a marker with the sizes, the whole within `max_bytes`."""
    # "replace": a lone surrogate (e.g. a file name decoded with surrogateescape) cannot be
    # encoded, stored or sent, so it becomes "?" here rather than an error later.
    data = text.encode("utf-8", errors="replace")
    if len(data) <= max_bytes:
        return data.decode()
    # The marker's length depends on the number shown; the largest it can be is with max_bytes.
    room = max_bytes - len(_truncation_marker(max_bytes, len(data)).encode())
    # Bytes of a character cut in half are dropped: everything before them is whole UTF-8.
    shown = data[:room].decode("utf-8", errors="ignore")
    return shown + _truncation_marker(len(shown.encode()), len(data))


def _truncation_marker(shown: int, total: int) -> str:
    return f"\n[… truncated: showing the first {shown} of {total} bytes]"
