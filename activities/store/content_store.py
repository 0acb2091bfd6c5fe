"""A content-addressed store for conversation content (the claim check).

Objects are keyed by the SHA-256 of their bytes, so a retried or replayed activity that puts the
same content writes the same key: puts are idempotent and need no coordination between workers.
Objects are never deleted by turnkeeper; they must outlive the Temporal retention of every
workflow that refers to them (see the README's "Content store" section).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Protocol

_HEX64 = re.compile(r"[0-9a-f]{64}")


class ContentMissingError(LookupError):
    """The store has no object under a reference that a workflow holds."""


def content_ref(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class ContentStore(Protocol):
    async def put(self, data: bytes) -> str: ...

    async def get(self, ref: str) -> bytes: ...


class LocalFolderStore:
    """The embedded default: one file per object under a folder shared by the workers of a host."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, ref: str) -> Path:
        algorithm, _, digest = ref.partition(":")
        if algorithm != "sha256" or not _HEX64.fullmatch(digest):
            raise ContentMissingError(f"not a content reference: {ref!r}")
        return self.root / digest[:2] / digest[2:]

    async def put(self, data: bytes) -> str:
        ref = content_ref(data)
        path = self._path(ref)
        if not path.exists():
            await asyncio.to_thread(_write_atomically, path, data)
        return ref

    async def get(self, ref: str) -> bytes:
        path = self._path(ref)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise ContentMissingError(f"content {ref} is not in the store at {self.root}") from None


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Write-then-rename so a reader never sees half an object, even when two workers race.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
