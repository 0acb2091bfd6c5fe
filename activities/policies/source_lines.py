"""Lines of a Cedar policy file: where a parse error is, and where each policy starts.

`cedarpy` reports a parse error's message without its place, so the place is found here: the
first line at which the file read that far fails with the same message (a shorter prefix fails
only with "unexpected end of input"). Policies are numbered by Cedar in file order (`policy0`,
…); a small scanner finds the line each begins on, skipping strings and comments.
"""

from __future__ import annotations

import cedarpy

_END_OF_INPUT = "unexpected end of input"


def error_line(text: str, message: str) -> int:
    """The 1-based line of the parse error `message` in `text`."""
    lines = text.splitlines(keepends=True)
    last = max((n for n, line in enumerate(lines, 1) if line.strip()), default=1)
    if message == _END_OF_INPUT:
        return last
    for count in range(1, len(lines) + 1):
        try:
            cedarpy.PolicySet.from_str("".join(lines[:count]))
        except ValueError as err:
            if str(err) == message:
                return count
    return last


def policy_lines(text: str) -> list[int]:
    """The 1-based line each policy of `text` begins on (its first annotation, if any)."""
    starts: list[int] = []
    line, between, quoted, escaped, comment = 1, True, False, False, False
    previous = ""
    for char in text:
        if char == "\n":
            line, comment = line + 1, False
        elif comment:
            pass
        elif quoted:
            quoted = char != '"' or escaped
            escaped = char == "\\" and not escaped
        elif char == "/" and previous == "/":
            comment = True
        elif char == '"':
            quoted = True
        elif char == ";":
            between = True
        elif between and not char.isspace() and char != "/":
            starts.append(line)
            between = False
        previous = char if not quoted else ""
    return starts
