"""The cassette file: JSON Lines, a header line then one recorded model call a line.

    {"turnkeeper_cassette": 1}
    {"key": "<sha256>", "request": {…}, "response": {…}, "text": ["Hel", "lo"]}

One line a call, appended whole under an exclusive `flock`, so that several workers recording
into one file never interleave their lines; a call whose key the file already holds is not
appended again (the first answer recorded is the one replayed). `text` holds the pieces a
streaming call passed on, so that a replay streams the same events.

Hand-written, not vcrpy: vcrpy records HTTP exchanges keyed by URL and body, with the headers
(the API key among them) to scrub, and it cannot patch the SDKs' async HTTP streams the same way
for both providers; this records at the provider seam, where no header exists.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError
from turnkeeper.activities.providers.provider import ModelResponse
from turnkeeper.activities.providers.redaction import redact

FORMAT_FIELD: Final = "turnkeeper_cassette"
FORMAT_VERSION: Final = 1
HEADER: Final = {FORMAT_FIELD: FORMAT_VERSION}


class CassetteFormatError(ValueError):
    """The file is not a cassette (or not one this version reads); the message names the file
    and the line."""


@dataclass(frozen=True)
class Exchange:
    """One recorded model call."""

    key: str
    request: dict[str, Any]
    response: ModelResponse
    text: list[str] = field(default_factory=list)

    def line(self) -> str:
        return json.dumps(
            {
                "key": self.key,
                "request": self.request,
                "response": self.response.model_dump(mode="json"),
                "text": self.text,
            },
            ensure_ascii=False,
        )


def load(path: Path, *, missing_ok: bool) -> list[Exchange]:
    """The exchanges of the cassette at `path`, in recorded order.

    Raises:
        CassetteFormatError: The file is missing (unless `missing_ok`), empty where a cassette
            is needed, or not a cassette.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if missing_ok:
            return []
        raise CassetteFormatError(
            f"{path}: no such cassette; record one first (TURNKEEPER_CASSETTE_MODE=record)"
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise CassetteFormatError(f"{path}: cannot be read as a cassette: {err}") from None
    return parse(path, text.splitlines(), missing_ok=missing_ok)


def parse(path: Path, lines: list[str], *, missing_ok: bool = False) -> list[Exchange]:
    """The exchanges of a cassette's `lines` (see `load`)."""
    if not lines:
        if missing_ok:
            return []
        raise CassetteFormatError(f"{path}: the cassette is empty; record it first")
    _check_header(path, lines[0])
    return [_exchange(path, number, line) for number, line in enumerate(lines[1:], 2) if line]


def _check_header(path: Path, line: str) -> None:
    try:
        header = json.loads(line)
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or FORMAT_FIELD not in header:
        raise CassetteFormatError(
            f'{path}: not a cassette (its first line must be {{"{FORMAT_FIELD}": '
            f"{FORMAT_VERSION}}})"
        )
    if header[FORMAT_FIELD] != FORMAT_VERSION:
        raise CassetteFormatError(
            f"{path}: cassette format {header[FORMAT_FIELD]!r}; this turnkeeper reads "
            f"format {FORMAT_VERSION}"
        )


def _exchange(path: Path, number: int, line: str) -> Exchange:
    try:
        raw = json.loads(line)
        if not isinstance(raw, dict):
            raise TypeError("not a JSON object")
        text = raw.get("text", [])
        if not isinstance(raw["key"], str) or not isinstance(raw["request"], dict):
            raise TypeError("key must be a string and request an object")
        if not isinstance(text, list) or not all(isinstance(t, str) for t in text):
            raise TypeError("text must be a list of strings")
        response = ModelResponse.model_validate(raw["response"])
    except (json.JSONDecodeError, KeyError, TypeError, ValidationError) as err:
        reason = f"missing {err}" if isinstance(err, KeyError) else str(err).splitlines()[0]
        message = f"{path}, line {number}: not a recorded call ({reason})"
        raise CassetteFormatError(message) from None
    return Exchange(raw["key"], raw["request"], response, text)


def append(path: Path, exchange: Exchange, secrets: Iterable[str] = ()) -> bool:
    """Appends `exchange` unless the file already holds its key; True if it was appended.

    The check and the write happen under one exclusive lock on the file, so that concurrent
    workers neither interleave lines nor record one call twice. `secrets` are redacted from the
    line first (see `cassette_provider.environment_secrets`).

    Raises:
        CassetteFormatError: The file exists and is not a cassette.
    """
    line = redact(exchange.line(), secrets)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "r+", encoding="utf-8") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        try:
            file.seek(0)
            held = parse(path, file.read().splitlines(), missing_ok=True)
            if any(recorded.key == exchange.key for recorded in held):
                return False
            prefix = "" if held or file.tell() else json.dumps(HEADER) + "\n"
            file.write(prefix + line + "\n")
            file.flush()
            return True
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


def create_if_missing(path: Path) -> None:
    """Writes an empty cassette (its header) when there is no file yet, so that a worker
    recording into a new path finds a cassette at its next start."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(json.dumps(HEADER) + "\n")
