"""The matching half of `search_files`: one search's pattern, deadline, matches and tally.

Matching is RE2's (google-re2), not Python's `re`. The model writes the pattern, and a prompt
injection writes the model's words: under `re`, `(a+)+$` over a line of 40 a's and a '!'
backtracks for hours while holding the GIL, freezing the whole worker (every turn, heartbeat and
probe) where no timeout can fire. RE2 never backtracks (time linear in the line, times the
pattern's size) and releases the GIL while it matches. The `regex` package was the other choice:
it keeps every Python construct, but its `timeout=` bounds a backtracking search only roughly
(seen at three times its bound) and lets each call burn a core until then.

Walking the workspace safely is `workspace.py`'s part; this module gets files already open.
"""

from __future__ import annotations

import os
import stat
import time
from typing import BinaryIO, Protocol

from turnkeeper.activities.tools.registry import ToolError

MAX_SEARCH_MATCHES = 200
MAX_LINE_CHARS = 300
# Larger files are skipped by search_files: a regex over them would outlast the tool's timeout.
MAX_SEARCH_FILE_BYTES = 8 * 1024 * 1024
# One search's wall-clock bound, well inside the tool's 60 s timeout: past it the search stops
# itself (a thread cannot be stopped from outside) and the model is told to narrow it.
SEARCH_TIME_LIMIT_S = 20.0
# RE2's work on a line is its length times the compiled pattern's size; this bounds the second
# factor. `\p{L}+` compiles to 1,201 instructions, `.{0,100}error` to 909, `TODO\b` to 9.
MAX_PATTERN_PROGRAM_SIZE = 2000
PATTERN_SYNTAX = "RE2 syntax: Python's, without lookarounds or backreferences"
_SNIFF_BYTES = 8192


class _Pattern(Protocol):
    """A compiled RE2 pattern, as far as a search uses it (google-re2 ships no type hints)."""

    def search(self, text: str) -> object: ...


class LineSearch:
    """One `search_files` call: matching lines of the files it is handed, until it has
    `max_matches` or its time is up.

    Raises:
        ToolError: the pattern is not RE2 syntax or too large (on creation), or the search ran
            out of time (from `search_file`).
    """

    def __init__(self, pattern: str, max_matches: int = MAX_SEARCH_MATCHES) -> None:
        self._pattern = pattern
        self._regex = _compiled(pattern)
        self._max_matches = max_matches
        self._deadline = time.monotonic() + SEARCH_TIME_LIMIT_S
        self._matches: list[str] = []
        self._searched = 0
        self._skipped = 0  # binary, oversized, unreadable or hard-linked
        self._hidden = 0  # their paths hold characters no name may hold

    @property
    def full(self) -> bool:
        """One match more than is shown was found: the answer says it stopped there."""
        return len(self._matches) > self._max_matches

    def pass_over_hidden(self) -> None:
        """A file whose path cannot be shown is counted, not searched."""
        self._hidden += 1

    def search_file(self, fd: int | None, shown: str) -> None:
        """Searches the open file `fd` (closed here; None: it could not be opened)."""
        if fd is None:
            self._skipped += 1
            return
        with os.fdopen(fd, "rb") as handle:
            if not _searchable(fd):
                self._skipped += 1
                return
            self._grep(handle, shown)
            self._searched += 1

    def _grep(self, handle: BinaryIO, shown: str) -> None:
        for number, raw in enumerate(handle, 1):
            if time.monotonic() >= self._deadline:
                raise self._out_of_time()
            line = raw.decode(errors="replace").rstrip("\r\n")
            if self._regex.search(line):
                self._matches.append(f"{shown}:{number}: {line[:MAX_LINE_CHARS]}")
                if self.full:
                    return

    def report(self, shown: str) -> str:
        """The answer for the model, about a search at or under `shown`."""
        matches, notes = self._matches, []
        if self.full:
            matches = matches[: self._max_matches]
            notes.append(
                f"[stopped after {self._max_matches} matches; narrow the pattern or the path]"
            )
        if self._skipped:
            notes.append(f"[{self._skipped} binary, oversized or unreadable files skipped]")
        if self._hidden:
            notes.append(f"[{self._hidden} files whose paths hold control characters skipped]")
        if not matches:
            head = (
                f"no matches for {self._pattern!r} in '{shown}' ({self._searched} files searched)"
            )
            return "\n".join([head, *notes])
        return "\n".join([*matches, *notes])

    def _out_of_time(self) -> ToolError:
        return ToolError(
            f"search_files stopped after {SEARCH_TIME_LIMIT_S:g} s with {len(self._matches)} "
            f"matches in {self._searched} files searched; narrow the path or simplify the pattern"
        )


def _compiled(pattern: str) -> _Pattern:
    """`pattern` compiled by RE2, or a `ToolError` saying what to change."""
    # Imported at the first search, not with the worker: a worker whose turns never search
    # files should not hold RE2's native library (1 MiB of every idle worker's memory).
    import re2

    options = re2.Options()
    options.log_errors = False  # the model is told why; RE2 would also print it on stderr
    try:
        regex = re2.compile(pattern, options)
    except re2.error as err:
        reason = err.args[0].decode(errors="replace") if err.args else "not RE2 syntax"
        raise ToolError(f"invalid regex {pattern!r}: {reason} ({PATTERN_SYNTAX})") from None
    except UnicodeEncodeError:  # a lone surrogate, which JSON can carry
        raise ToolError(f"invalid regex {pattern!r}: it is not valid Unicode") from None
    if regex.programsize > MAX_PATTERN_PROGRAM_SIZE:
        raise ToolError(
            f"regex {pattern!r} is too large to search with (it compiles to "
            f"{regex.programsize} instructions, the limit is {MAX_PATTERN_PROGRAM_SIZE}); "
            "use smaller repetition counts or fewer alternatives"
        )
    return regex


def _searchable(fd: int) -> bool:
    """A regular text file of one link and a searchable size: a second link may be a name of
    a file outside the workspace."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        return False
    return info.st_size <= MAX_SEARCH_FILE_BYTES and b"\0" not in os.pread(fd, _SNIFF_BYTES, 0)
