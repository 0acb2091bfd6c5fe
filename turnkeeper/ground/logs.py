"""How turnkeeper's own code logs, as a library inside someone else's process.

structlog left unconfigured prints every event, DEBUG included, on the application's stdout, so
`turnkeeper.connect()` wrote a line into the output of any script that called it. Our loggers
therefore follow the application's structlog configuration when it has one (our worker and
console configure it: `turnkeeper.worker.logging`), and otherwise hand their lines to the standard
`logging` logger of the module, whose configuration the application owns (by default: warnings
and errors on stderr, nothing below).

A log line also must never stop the program that writes it: a stream whose reader is gone
(`python worker.py | tee log` after a Ctrl-C killed `tee`) made the stop handler's line raise,
so the worker never stopped. Writing a line that fails is dropped, as `logging` itself does.

structlog is never imported here: importing it imports `structlog.dev`, which loads `rich` when
it is installed, and a library user's `connect` and `start_turn` need neither. An application
that configured structlog has imported it; one that has not gets the `logging` path, which
needs no structlog.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any, Final

# structlog's method names and the `logging` level each writes at.
_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "exception": logging.ERROR,
    "critical": logging.CRITICAL,
}


def get_logger(name: str) -> Any:
    """The logger of module `name`: `log.info("event", key=value)` as with structlog.

    Typed `Any` as `structlog.get_logger` is: its methods depend on the configuration.
    """
    return _LibraryLogger(name)


class _LibraryLogger:
    """Chooses at each call, since the application may configure structlog after our import."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._plain = logging.getLogger(name)

    def __getattr__(self, method: str) -> Callable[..., Any]:
        structlog = sys.modules.get("structlog")
        if structlog is not None and structlog.is_configured():
            call = getattr(structlog.get_logger(self._name), method)
        elif method in _LEVELS:
            call = _plain_call(self._plain, method)
        else:
            raise AttributeError(method)

        def logged(*args: Any, **kwargs: Any) -> Any:
            try:
                return call(*args, **kwargs)
            except (OSError, ValueError):  # a broken pipe, a closed file: the line is lost
                return None

        return logged


def _plain_call(logger: logging.Logger, method: str) -> Callable[..., None]:
    """`method` of `logger` taking structlog's arguments: the event as one line of text,
    `event key=value …`; a traceback goes to `logging` as one (`exception` adds the current).

    Not as `extra=`: a key such as `name` or `message` would make `logging` refuse the record.
    """
    level = _LEVELS[method]

    def call(event: object = "", *args: Any, **fields: Any) -> None:
        if not logger.isEnabledFor(level):
            return
        exc_info = fields.pop("exc_info", method == "exception")
        text = str(event) % args if args else str(event)
        pairs = " ".join(f"{key}={value!r}" for key, value in fields.items())
        logger.log(level, "%s", f"{text} {pairs}" if pairs else text, exc_info=exc_info)

    return call
