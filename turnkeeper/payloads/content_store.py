"""A content-addressed store for conversation content (the claim check).

Objects are keyed by the SHA-256 of their bytes, so a retried or replayed activity that puts the
same content writes the same key: puts are idempotent and need no coordination between workers.
Objects are never deleted by turnkeeper; they must outlive the Temporal retention of every
workflow that refers to them (see the README's "Content store" section).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Protocol

_ALGORITHM = "sha256"
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")
_BASE64_DIGEST = re.compile(r"[A-Za-z0-9_-]{43}")


class ContentMissingError(LookupError):
    """The store has no object under a reference that a workflow holds."""


def content_ref(data: bytes) -> str:
    """`sha256:` and the digest in unpadded base64url: 50 characters where hex takes 71, and
    references are written into history on every iteration."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{_ALGORITHM}:{digest}"


def hex_digest(ref: str) -> str:
    """The digest of a reference in hex, which names the object in every store (file systems
    that ignore case could not tell base64 names apart). Hex references, which turns started
    before base64 was adopted still hold, are read too."""
    algorithm, _, digest = ref.partition(":")
    if algorithm == _ALGORITHM:
        if _HEX_DIGEST.fullmatch(digest):
            return digest
        if _BASE64_DIGEST.fullmatch(digest):
            return base64.urlsafe_b64decode(digest + "=").hex()
    raise ContentMissingError(f"not a content reference: {ref!r}")


class ContentStore(Protocol):
    async def put(self, data: bytes) -> str: ...

    async def get(self, ref: str) -> bytes: ...

    async def aclose(self) -> None:
        """Releases connections; the store stays usable (a later call reconnects)."""


# Objects up to this size are read and written on the event loop: on a local disk that takes
# microseconds, less than handing the call to a thread and back (which was a tenth of a worker's
# store time). Larger ones go to a thread so that the loop never waits on a big copy.
INLINE_IO_BYTES = 256 * 1024


class LocalFolderStore:
    """The embedded default: one file per object under a folder shared by the workers of a host."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, ref: str) -> Path:
        digest = hex_digest(ref)
        return self.root / digest[:2] / digest[2:]

    async def put(self, data: bytes) -> str:
        ref = content_ref(data)
        path = self._path(ref)
        if not path.exists():
            if len(data) <= INLINE_IO_BYTES:
                _write_atomically(path, data)
            else:
                await asyncio.to_thread(_write_atomically, path, data)
        return ref

    async def get(self, ref: str) -> bytes:
        path = self._path(ref)
        try:
            if path.stat().st_size <= INLINE_IO_BYTES:
                return path.read_bytes()
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise ContentMissingError(f"content {ref} is not in the store at {self.root}") from None

    async def aclose(self) -> None:
        pass  # files hold no connection


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
