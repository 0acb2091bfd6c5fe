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
"""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping
from typing import Any

import structlog


def get_logger(name: str) -> Any:
    """The logger of module `name`: `log.info("event", key=value)` as with structlog.

    Typed `Any` as `structlog.get_logger` is: its methods depend on the configuration.
    """
    return _LibraryLogger(name)


class _LibraryLogger:
    """Chooses at each call, since the application may configure structlog after our import."""

    def __init__(self, name: str) -> None:
        self._configured = structlog.get_logger(name)
        self._plain = structlog.wrap_logger(
            logging.getLogger(name),
            processors=[structlog.stdlib.filter_by_level, _to_log_call],
            wrapper_class=structlog.stdlib.BoundLogger,
        )

    def __getattr__(self, method: str) -> Callable[..., Any]:
        chosen = self._configured if structlog.is_configured() else self._plain
        call = getattr(chosen, method)

        def logged(*args: Any, **kwargs: Any) -> Any:
            try:
                return call(*args, **kwargs)
            except (OSError, ValueError):  # a broken pipe, a closed file: the line is lost
                return None

        return logged


def _to_log_call(
    _logger: Any, _method: str, event: MutableMapping[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The event as one line of text, `event key=value …`; a traceback goes to `logging` as one.

    Not as `extra=`: a key such as `name` or `message` would make `logging` refuse the record.
    """
    exc_info = event.pop("exc_info", None)
    text = str(event.pop("event", ""))
    fields = " ".join(f"{key}={value!r}" for key, value in event.items())
    return ((f"{text} {fields}" if fields else text,), {"exc_info": exc_info})
