"""The terminal of the console command: its two rich consoles, its error type and where its
diagnostics go.

User-facing output (reports, tables, prompts) is rich; diagnostics stay structlog JSON and are
kept out of the way: on stderr at WARNING for the ordinary commands, in a file for the demo.

Both consoles show what they print and never let it drive the terminal: most of it was written
by someone else (a model, a file the model read, whoever sent a signal), so it is neither rich
markup nor a stream of control sequences (see `ShowingConsole`).
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, NoReturn

import typer
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from turnkeeper.ground.process_exit import exit_without_teardown
from turnkeeper.worker.logging import configure_logging

# What a terminal obeys rather than shows: the C0 controls but newline and tab, DEL, the C1
# controls (0x9b is a one-byte CSI on many terminals) and the bidirectional controls that
# reorder the characters around them on screen.
_OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with each character a terminal would obey written as its escape, `\\u001b`.

    JSON's notation rather than Python's `\\x1b`: a raw DEL or C1 character inside the JSON
    that `--json` prints becomes an escape that decodes to the same string, so the output stays
    valid JSON."""
    return _OBEYED.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


class ShowingConsole(Console):
    """A rich console that shows what it prints: no markup, no emoji codes, and every control
    character written out (`visible`) instead of sent to the terminal.

    Done here, where every renderable (a `Text`, a table's cells, a panel, a live display) turns
    into segments, so that no call site can forget it. Rich's own sequences are not in the text:
    styles are rendered from a segment's style, and a live display's cursor moves are control
    segments, which pass. Rich already drops BEL, backspace, vertical tab, form feed and
    carriage return from every `Text`. The escapes are written after layout: a line holding one
    may run a few columns wider than measured.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(markup=False, emoji=False, highlight=False, **options)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not _OBEYED.search(segment.text):
                yield segment
            else:
                yield Segment(visible(segment.text), segment.style)


# `file=None` makes rich look up sys.stdout / sys.stderr at each write, so output follows a
# redirection made after import (typer's CliRunner in the tests does exactly that).
out = ShowingConsole()
err = ShowingConsole(stderr=True)


class CommandError(Exception):
    """A sentence for the person at the terminal, and the exit code that goes with it."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class ConsoleApp(typer.Typer):
    """The typer app, ending the process without interpreter teardown when run as a script.

    A short-lived process that used a Temporal client can abort in CPython's finalization
    ("PyGILState_Release: thread state must be current", temporalio/sdk-python#300) because the
    SDK's Rust threads outlive the interpreter. Everything this command owns (the demo's worker
    and dev server included) is stopped before `asyncio.run` returns, so skipping the teardown
    loses nothing. Tests call the command through `CliRunner`, which does not pass here.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        try:
            super().__call__(*args, **kwargs)
            code: object = 0
        except SystemExit as stop:
            code = stop.code
        exit_without_teardown(code)


class _CurrentStderr(io.TextIOBase):
    """Writes to whatever `sys.stderr` is at the time of the write, not at configuration."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def log_to_stderr(level: str) -> None:
    """JSON diagnostics on stderr at `level`.

    `configure_logging` binds the stderr of the moment; rebinding it to a forwarder keeps a
    command run in-process (the tests) from logging into a stream closed after the command.
    """
    configure_logging(level)
    _redirect_handlers(_CurrentStderr())


@contextlib.contextmanager
def logging_to_file(path: Path, level: str = "INFO") -> Iterator[None]:
    """JSON diagnostics appended to `path` for the duration of the block, so that they do not
    interleave with a live terminal session (the demo)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as stream:
        configure_logging(level)
        _redirect_handlers(stream)
        try:
            yield
        finally:
            # Late records (a worker thread winding down) must not hit a closed file.
            _redirect_handlers(_CurrentStderr())
            logging.getLogger().setLevel(logging.WARNING)


def _redirect_handlers(stream: IO[str] | io.TextIOBase) -> None:
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(stream)
