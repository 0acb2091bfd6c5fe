"""The codec server's configuration error, apart from the server: `python worker.py` names it
to report a `--dev` stack that cannot start, and should not load aiohttp to do so."""

from __future__ import annotations


class CodecServerError(RuntimeError):
    """The codec server cannot start as configured (the message says what to change)."""
