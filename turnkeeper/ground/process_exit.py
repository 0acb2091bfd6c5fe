"""Ending a process that used a Temporal client, without the interpreter's teardown.

The console, `python worker.py` and library users' scripts end this way (`turnkeeper.
exit_without_teardown`); it lives below them all so that none loads another's modules for it
(the console's typer and rich are 6 MiB a worker does not need)."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn


def exit_without_teardown(code: object) -> NoReturn:
    """Ends the process as `SystemExit(code)` would, but skipping interpreter finalization (see
    `turnkeeper.console.terminal.ConsoleApp`): for processes that used a Temporal client and
    stopped all they own."""
    if isinstance(code, str):  # SystemExit("message") means: print it, exit 1
        with contextlib.suppress(OSError, ValueError):  # closed, or a pipe whose reader left
            sys.stderr.write(code + "\n")
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)
